"""Triggering and routing: does the skill fire when it should, and which skill was chosen."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from skilleval.stats._exact import rounded
from skilleval.util.frozen import frozen


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


@frozen
class TriggerMetrics:
    """Binary classification counts for "should the skill fire?" and the usual rates.

    A rate is ``None`` when its denominator is zero (e.g. precision with no predicted
    triggers), never a division error and never a made-up 0 or 1.
    """

    tp: int
    """Expected to trigger and did."""
    fp: int
    """Triggered when it should not have."""
    tn: int
    """Stayed quiet, as expected."""
    fn: int
    """Should have triggered and did not."""

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    @property
    def accuracy(self) -> float | None:
        return _ratio(self.tp + self.tn, self.n)

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        # 2TP / (2TP + FP + FN) equals the harmonic mean when both are defined, and is still
        # defined (as 0) when precision is undefined but there were misses.
        return _ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    def to_json(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else rounded(x)

        return {
            "tp": self.tp,
            "fp": self.fp,
            "tn": self.tn,
            "fn": self.fn,
            "n": self.n,
            "accuracy": r(self.accuracy),
            "precision": r(self.precision),
            "recall": r(self.recall),
            "f1": r(self.f1),
        }


def trigger_metrics(rows: Iterable[tuple[bool, bool]]) -> TriggerMetrics:
    """Count ``(expected_trigger, did_trigger)`` rows into a confusion table.

    Precision, recall and F1 are the standard information-retrieval definitions (van
    Rijsbergen, "Information Retrieval", 2nd ed., 1979, ch. 7).

    Args:
        rows: One ``(expected, actual)`` pair per test run.

    Returns:
        The counts; rates are properties on the result.
    """
    tp = fp = tn = fn = 0
    for expected, did in rows:
        if expected and did:
            tp += 1
        elif did:
            fp += 1
        elif expected:
            fn += 1
        else:
            tn += 1
    return TriggerMetrics(tp, fp, tn, fn)


@frozen
class ConfusionMatrix:
    """Routing outcomes: rows are the expected label, columns the label chosen."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    """``counts[i][j]``: expected ``labels[i]``, chose ``labels[j]``."""

    def count(self, expected: str, chosen: str) -> int:
        return self.counts[self.labels.index(expected)][self.labels.index(chosen)]

    @property
    def total(self) -> int:
        return sum(sum(row) for row in self.counts)

    @property
    def accuracy(self) -> float | None:
        """Share of rows routed to the expected label; ``None`` with no rows."""
        return _ratio(sum(self.counts[i][i] for i in range(len(self.labels))), self.total)

    def one_vs_rest(self, label: str) -> TriggerMetrics:
        """Binary metrics for one label: "expected ``label``" against "chose ``label``"."""
        i = self.labels.index(label)
        tp = self.counts[i][i]
        row = sum(self.counts[i])
        col = sum(r[i] for r in self.counts)
        return TriggerMetrics(tp=tp, fp=col - tp, tn=self.total - row - col + tp, fn=row - tp)

    def to_json(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "counts": [list(r) for r in self.counts]}


def confusion_matrix(
    rows: Iterable[tuple[str, str]], labels: Sequence[str] | None = None
) -> ConfusionMatrix:
    """Tabulate ``(expected_label, chosen_label)`` rows, e.g. skill names plus ``"none"``.

    Args:
        rows: One ``(expected, chosen)`` pair per routing decision.
        labels: Row and column order. Labels seen in ``rows`` but missing here are appended in
            sorted order, so no decision is dropped. Defaults to all seen labels, sorted.

    Returns:
        The matrix.

    Raises:
        ValueError: If ``labels`` repeats a label.
    """
    data = list(rows)
    given = list(labels or ())
    if len(set(given)) != len(given):
        raise ValueError(f"labels must be distinct, got {given}")
    seen = {x for pair in data for x in pair}
    order = given + sorted(seen - set(given))
    index = {label: i for i, label in enumerate(order)}
    grid = [[0] * len(order) for _ in order]
    for expected, chosen in data:
        grid[index[expected]][index[chosen]] += 1
    return ConfusionMatrix(labels=tuple(order), counts=tuple(tuple(r) for r in grid))
