"""The side-by-side judge's preference over a run, with its exact sign test.

Each test and trial graded by ``side-by-side`` is one comparison: the skill-on answer
preferred, the skill-off one, or a tie. Ties are left out of the test, as dotnet/skills
leaves them out: the one-sided exact sign test asks whether ON is preferred more often than
chance over the comparisons that chose. The words are shared by every renderer.
"""

from __future__ import annotations

from skilleval.results.model import Run
from skilleval.stats.paired import sign_test_greater
from skilleval.util.frozen import frozen

SIDE_BY_SIDE = "side-by-side"


@frozen
class Preference:
    """How often each arm's answer was preferred, over the run's side-by-side comparisons."""

    on: int
    off: int
    ties: int
    errors: int
    p_value: float
    """One-sided exact sign test that ON is preferred, ties left out."""

    def line(self) -> str:
        compared = self.on + self.off + self.ties
        head = f"side by side: on preferred {self.on}/{compared}, off {self.off}, ties {self.ties}"
        errors = f", {self.errors} not judged (errors)" if self.errors else ""
        return f"{head}{errors} · exact one-sided sign test p = {self.p_value:.3g} (ties left out)"


def preference(run: Run) -> Preference | None:
    """The preference over ``run``, or None when no test is graded side by side."""
    seen: dict[tuple[str, int], str] = {}
    errors = 0
    for record in run.records:
        if record.arm != "on":
            continue
        for result in record.asserts:
            if result.type != SIDE_BY_SIDE:
                continue
            preferred = result.details.get("preferred") if result.details else None
            if result.status == "error" or preferred not in ("on", "off", "tie"):
                errors += 1
            else:
                seen[(record.test_id, record.trial)] = str(preferred)
            break
    if not seen and not errors:
        return None
    on = sum(p == "on" for p in seen.values())
    off = sum(p == "off" for p in seen.values())
    return Preference(on, off, len(seen) - on - off, errors, sign_test_greater(on, off))
