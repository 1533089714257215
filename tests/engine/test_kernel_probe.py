"""The kernel probe's memo without a model: a verdict is read back only as it was written
(engine/kernel_probe.py), and what a verdict decides (engine/kernel_policy.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skilleval.engine.kernel_policy import PROMPT_GRID, KernelPolicy
from skilleval.engine.kernel_probe import MEMO_FILE, Kernels, keep, probe_key, recall
from skilleval.engine.llama_config import LlamaConfig

KEY = probe_key("ab" * 32, "0.3.36", ("AVX2", "REPACK"), 0)
DIFFER = Kernels(splits=False, batches=True, split_diff=0.4, probe_ms=12.5)


def test_a_kept_verdict_is_read_back_under_its_key_only(tmp_path: Path) -> None:
    keep(tmp_path, KEY, DIFFER)
    found = recall(tmp_path, KEY)
    assert found == DIFFER
    assert found is not None
    assert found.remembered
    assert recall(tmp_path, probe_key("ab" * 32, "0.3.36", ("AVX2",), 0)) is None
    assert recall(tmp_path, probe_key("ab" * 32, "0.3.36", ("AVX2", "REPACK"), -1)) is None


def _edit(home: Path, **changes: object) -> None:
    """Change the stored entry and seal the memo file again, as an editor that knows the
    memo's own digest would (util/memo.py): only the entry's digest can tell."""
    from skilleval.util.memo import remember

    memo = home / MEMO_FILE
    entry = json.loads(memo.read_text())["entries"][KEY]
    remember(memo, KEY, {**entry, **changes})


@pytest.mark.parametrize(
    "changes",
    [
        {"splits": True},
        {"split_diff": 0.0},
        {"batches": "yes"},
        {"probe_ms": -1},
        {"digest": None},
    ],
)
def test_an_edited_verdict_is_a_miss(tmp_path: Path, changes: dict[str, object]) -> None:
    keep(tmp_path, KEY, DIFFER)
    _edit(tmp_path, **changes)
    assert recall(tmp_path, KEY) is None


def test_a_damaged_memo_is_a_miss_with_one_warning(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    keep(tmp_path, KEY, DIFFER)
    memo = tmp_path / MEMO_FILE
    memo.write_text(memo.read_text().replace("0.4", "0.5"))
    assert recall(tmp_path, KEY) is None
    assert "kernel-probe.json is damaged and was not used" in capfd.readouterr().err


def _policy(tmp_path: Path, asked: int, n_batch: int = 512) -> KernelPolicy:
    return KernelPolicy(
        tmp_path, asked, LlamaConfig(n_batch=n_batch), lambda: ("ab" * 32, "0.3.36", ())
    )


def test_what_a_verdict_decides(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    agree = Kernels(splits=True, batches=True)
    policy = _policy(tmp_path, 4)
    assert policy.width(agree, "a.gguf") == 4
    assert policy.salt(agree) == ""
    assert policy.info() == {"kernels": {"splits": True, "batches": True}}

    policy = _policy(tmp_path, 4)
    assert policy.width(DIFFER, "k.gguf") == 1
    assert policy.salt(DIFFER) == f";prompt-grid={PROMPT_GRID}"
    info = policy.info()
    assert info["kernels"] == {"splits": False, "batches": True, "prompt_grid": PROMPT_GRID}
    assert info["batch_width_reason"].startswith("4 asked")
    assert _policy(tmp_path, 4).width(DIFFER, "k.gguf") == 1  # said once per model
    warnings = capfd.readouterr().err.splitlines()
    assert len(warnings) == 1
    assert warnings[0].startswith("warning: k.gguf: a prompt split into other batches")

    small = _policy(tmp_path, 1, n_batch=16)
    assert small.width(DIFFER, "k.gguf") == 1
    assert small.grid == 16
    assert "batch_width_reason" not in small.info()
