"""The lift verdict as a decision over numbers, with no wording.

:func:`decide` applies the rules in order and returns which one fired with the numbers it
compared; :mod:`skilleval.stats.wording` turns that into the sentence a report shows.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Literal

from skilleval.stats._exact import Sidedness, min_discordant, min_wins
from skilleval.util.frozen import frozen

LiftVerdict = Literal["helps", "hurts", "no evidence", "underpowered"]

Rule = Literal[
    "too-few-tests",
    "too-few-discordant",
    "helps",
    "below-min-lift",
    "hurts",
    "not-significant",
]
"""Which rule decided: the two ``underpowered`` rules, then ``helps``, then its near miss on
``min_lift``, ``hurts``, and ``not-significant`` for the remaining ``no evidence``."""


@frozen
class Decision:
    """A verdict, the rule that gave it, and the numbers the rule compared."""

    verdict: LiftVerdict
    rule: Rule
    n: int
    """Distinct tests compared."""
    b: int
    """Tests favouring ON."""
    c: int
    """Tests favouring OFF."""
    alpha: float
    min_lift: float
    min_tests: int
    sidedness: Sidedness
    lift: Fraction | None
    p: Fraction | None
    """The p-value the rule compared with alpha; None for the underpowered rules."""
    needed: int | None = None
    """For ``too-few-discordant``: discordant tests needed before any split is significant."""
    interval: tuple[float, float] | None = None
    """The 95% interval of the lift, when there is one."""

    @property
    def discordant(self) -> int:
        return self.b + self.c

    @property
    def interval_excludes_zero(self) -> bool:
        return self.interval is not None and (self.interval[0] > 0 or self.interval[1] < 0)


def decide(
    *,
    n: int,
    b: int,
    c: int,
    lift: Fraction | None,
    p_help: Fraction,
    p_hurt: Fraction,
    alpha: float,
    alpha_exact: Fraction,
    min_lift: float,
    min_lift_exact: Fraction,
    min_tests: int,
    sidedness: Sidedness,
    interval: tuple[float, float] | None,
) -> Decision:
    """Apply the verdict rules of :func:`~skilleval.stats.lift.lift_analysis` in order.

    Args:
        n: Distinct tests compared.
        b: Tests favouring ON.
        c: Tests favouring OFF.
        lift: The lift, exactly; None when ``n == 0``.
        p_help: p-value of "ON better" under the chosen sidedness.
        p_hurt: p-value of "OFF better" under the chosen sidedness.
        alpha: Significance level as given (for the wording).
        alpha_exact: The same, as the decimal written.
        min_lift: Smallest lift worth calling help, as given.
        min_lift_exact: The same, as the decimal written.
        min_tests: Fewest distinct tests before any verdict but underpowered.
        sidedness: The test used.
        interval: The lift's 95% interval, or None.

    Returns:
        The decision.
    """

    def out(
        verdict: LiftVerdict, rule: Rule, p: Fraction | None, needed: int | None = None
    ) -> Decision:
        return Decision(
            verdict=verdict,
            rule=rule,
            n=n,
            b=b,
            c=c,
            alpha=alpha,
            min_lift=min_lift,
            min_tests=min_tests,
            sidedness=sidedness,
            lift=lift,
            p=p,
            needed=needed,
            interval=interval,
        )

    if n < min_tests:
        return out("underpowered", "too-few-tests", None)
    if min_wins(b + c, alpha_exact, sidedness) is None:
        return out(
            "underpowered", "too-few-discordant", None, min_discordant(alpha_exact, sidedness)
        )
    assert lift is not None  # n >= min_tests and b + c > 0 imply n > 0
    if b > c and p_help <= alpha_exact:
        if lift >= min_lift_exact:
            return out("helps", "helps", p_help)
        return out("no evidence", "below-min-lift", p_help)
    if c > b and p_hurt <= alpha_exact:
        return out("hurts", "hurts", p_hurt)
    return out("no evidence", "not-significant", p_help if b >= c else p_hurt)
