"""Trigger metrics and the routing confusion matrix."""

from __future__ import annotations

import json

import pytest

from skilleval.stats import TriggerMetrics, confusion_matrix, trigger_metrics

# --------------------------------------------------------------------------- triggering


def test_trigger_metrics() -> None:
    rows = [(True, True)] * 6 + [(True, False)] * 2 + [(False, True)] + [(False, False)] * 3
    m = trigger_metrics(rows)
    assert (m.tp, m.fn, m.fp, m.tn, m.n) == (6, 2, 1, 3, 12)
    assert m.accuracy == 9 / 12
    assert m.precision == 6 / 7
    assert m.recall == 6 / 8
    assert m.f1 == pytest.approx(2 * (6 / 7) * (6 / 8) / (6 / 7 + 6 / 8))
    json.dumps(m.to_json())


def test_trigger_metrics_undefined_rates_are_none() -> None:
    empty = trigger_metrics([])
    assert (empty.accuracy, empty.precision, empty.recall, empty.f1) == (None, None, None, None)
    quiet = trigger_metrics([(False, False)] * 4)
    assert quiet.accuracy == 1.0
    assert (quiet.precision, quiet.recall, quiet.f1) == (None, None, None)
    missed = trigger_metrics([(True, False)] * 3)
    assert (missed.precision, missed.recall, missed.f1) == (None, 0.0, 0.0)
    assert missed.to_json()["precision"] is None


def test_confusion_matrix() -> None:
    rows = [
        ("pdf", "pdf"),
        ("pdf", "none"),
        ("docx", "docx"),
        ("none", "none"),
        ("none", "pdf"),
        ("docx", "xlsx"),
    ]
    cm = confusion_matrix(rows, labels=["pdf", "docx", "none"])
    assert cm.labels == ("pdf", "docx", "none", "xlsx")
    assert cm.count("pdf", "none") == 1
    assert cm.count("docx", "xlsx") == 1
    assert cm.total == 6
    assert cm.accuracy == 3 / 6
    assert cm.one_vs_rest("pdf") == TriggerMetrics(tp=1, fp=1, tn=3, fn=1)
    assert cm.to_json()["counts"][0] == [1, 0, 1, 0]
    assert confusion_matrix([("b", "a")]).labels == ("a", "b")
    assert confusion_matrix([]).accuracy is None
    with pytest.raises(ValueError, match="distinct"):
        confusion_matrix([], labels=["a", "a"])
