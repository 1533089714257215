"""Statistics for skill evaluations, as pure functions over counts.

Nothing here touches models, files or the clock, and nothing imports scipy: every estimator is
computed from binomial coefficients with exact rational arithmetic and converted to ``float``
only at the edge. The tests cross-check the results against scipy.

Modules:

* :mod:`~skilleval.stats.reliability`: pass@k, pass^k and the suite curve over repeated trials.
* :mod:`~skilleval.stats.paired`: one vote per test, the 2×2 table, the exact McNemar and sign
  tests, and the paired permutation test on per-test pass rates.
* :mod:`~skilleval.stats.intervals`: Wilson and Newcombe intervals.
* :mod:`~skilleval.stats.verdict` decides the lift verdict from numbers;
  :mod:`~skilleval.stats.wording` writes its reason; :mod:`~skilleval.stats.lift` puts the two
  together.
* :mod:`~skilleval.stats.power`: the chance of a ``helps`` verdict, and the tests needed.
* :mod:`~skilleval.stats.trigger`: trigger metrics and the routing confusion matrix.
* :mod:`~skilleval.stats.auroc`: the AUROC of a score over two classes, with Newcombe's
  interval (the router's skill margin over the ``should_trigger`` labels).

Notation for paired outcomes, one pair per distinct test: ``a`` both pass, ``b`` only ON (skill
loaded) passes, ``c`` only OFF passes, ``d`` both fail, ``n = a + b + c + d``.
"""

from __future__ import annotations

from skilleval.stats._exact import Z95, Sidedness, SidednessArg, sidedness_word
from skilleval.stats.auroc import AurocEstimate, auroc, mann_whitney_u, newcombe_auroc_interval
from skilleval.stats.intervals import newcombe_paired, wilson
from skilleval.stats.lift import LiftResult, lift_analysis, lift_from_trials
from skilleval.stats.paired import (
    PairedCounts,
    PermutationP,
    can_reach_significance,
    majority,
    mcnemar_exact,
    min_wins_for_significance,
    paired_counts,
    paired_permutation_test,
    sign_test_greater,
)
from skilleval.stats.power import (
    PowerPlan,
    discordant_for_power,
    discordant_power,
    observed_tie_rate,
    plan_power,
    suite_power,
)
from skilleval.stats.reliability import (
    Reliability,
    ReliabilityPoint,
    TestReliability,
    pass_at_k,
    pass_hat_k,
    reliability,
    reliability_from_outcomes,
)
from skilleval.stats.trigger import (
    ConfusionMatrix,
    TriggerMetrics,
    confusion_matrix,
    trigger_metrics,
)
from skilleval.stats.verdict import Decision, LiftVerdict

__all__ = [
    "Z95",
    "AurocEstimate",
    "ConfusionMatrix",
    "Decision",
    "LiftResult",
    "LiftVerdict",
    "PairedCounts",
    "PermutationP",
    "PowerPlan",
    "Reliability",
    "ReliabilityPoint",
    "Sidedness",
    "SidednessArg",
    "TestReliability",
    "TriggerMetrics",
    "auroc",
    "can_reach_significance",
    "confusion_matrix",
    "discordant_for_power",
    "discordant_power",
    "lift_analysis",
    "lift_from_trials",
    "majority",
    "mann_whitney_u",
    "mcnemar_exact",
    "min_wins_for_significance",
    "newcombe_auroc_interval",
    "newcombe_paired",
    "observed_tie_rate",
    "paired_counts",
    "paired_permutation_test",
    "pass_at_k",
    "pass_hat_k",
    "plan_power",
    "reliability",
    "reliability_from_outcomes",
    "sidedness_word",
    "sign_test_greater",
    "suite_power",
    "trigger_metrics",
    "wilson",
]
