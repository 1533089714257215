"""`run --shard K/N` on separate homes, then `merge`: the same run, record for record and
figure for figure, as running the suite whole; and every way parts can fail to belong
together is refused with one line and nothing written."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli

SKILL = """
---
name: tidy
description: Tidy a messy list. Use when the user asks to tidy, sort or clean a list.
---

Answer with TIDY and the list sorted.
"""

TESTS = 60
TRIALS = 3


def scripted_suite(tests: int = TESTS) -> str:
    """A skill suite on the scripted model: routing scores that differ per test (so the
    AUROC ranks something), and outputs that differ by arm and trial (so the lift test,
    pass@k and pass^k have something to count)."""
    rules: list[str] = []
    cases: list[str] = []
    for i in range(tests):
        tid = f"t{i:02d}"
        should = i % 4 != 0
        skill_score = -1.0 + (i * 37 % 17) / 10.0
        rules.append(
            f'    - {{id: {tid}, match: "You are a router", '
            f"scores: {{tidy: {skill_score}, none: 0.0}}}}"
        )
        on = ["TIDY a", "TIDY b", "messy"] if i % 3 else ["TIDY a", "TIDY b", "TIDY c"]
        off = ["messy", "TIDY x", "messy"] if i % 5 == 0 else ["messy"]
        rules.append(f"    - {{id: {tid}, arm: 'on', outputs: {json.dumps(on)}}}")
        rules.append(f"    - {{id: {tid}, arm: 'off', outputs: {json.dumps(off)}}}")
        words = " ".join(["item"] * (i % 9 + 1))
        cases.append(
            f"  - id: {tid}\n    vars: {{words: '{words}'}}\n"
            f"    should_trigger: {'true' if should else 'false'}\n"
            "    assert: [{type: contains, value: TIDY}]"
        )
    return (
        "version: 1\n"
        "model:\n  provider: scripted\n  responses:\n" + "\n".join(rules) + "\n"
        "skill: skill/SKILL.md\n"
        f"trials: {TRIALS}\n"
        "decoding: {mode: distribution, temperature: 0.7, seed: 11}\n"
        'prompts: ["Tidy this list: {{words}}"]\n'
        "tests:\n" + "\n".join(cases) + "\n"
    )


def make_suite(root: Path, text: str) -> Path:
    (root / "skill").mkdir(parents=True, exist_ok=True)
    (root / "skill" / "SKILL.md").write_text(textwrap.dedent(SKILL).lstrip(), encoding="utf-8")
    suite = root / "suite.yaml"
    suite.write_text(text, encoding="utf-8")
    return suite


def cli(args: list[str], home: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setenv("SKILLEVAL_HOME", str(home))
    return run_cli(args)


def run_dir(home: Path) -> Path:
    return (home / "runs" / "latest").resolve()


def whole_and_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suite: Path, count: int, *extra: str
) -> tuple[int, Path, list[int], list[Path]]:
    """The suite run whole in one home, and as ``count`` shards each in its own home."""
    whole_code = cli(["run", str(suite), "-q", *extra], tmp_path / "whole", monkeypatch)
    codes, parts = [], []
    for k in range(1, count + 1):
        home = tmp_path / f"shard{k}"
        codes.append(
            cli(["run", str(suite), "--shard", f"{k}/{count}", "-q", *extra], home, monkeypatch)
        )
        parts.append(run_dir(home))
    return whole_code, run_dir(tmp_path / "whole"), codes, parts


def records_by_key(root: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    out = {}
    for line in (root / "results.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        out[(r["test_id"], r["arm"], r["trial"])] = r
    return out


def assert_same_run(whole: Path, merged: Path, *, calls: bool = True) -> None:
    a = json.loads((whole / "results.json").read_text(encoding="utf-8"))
    b = json.loads((merged / "results.json").read_text(encoding="utf-8"))
    # Every record, in the same order, byte for byte: status, score, output and the rest.
    assert a["records"] == b["records"]
    assert records_by_key(whole) == records_by_key(merged)
    for block in ("summary", "lift", "trigger", "reliability", "gate", "suite"):
        assert a[block] == b[block], block
    different = {k for k in a if a[k] != b[k]}
    assert different <= {"run_id", "timing", *(() if calls else ("calls",))}


def test_three_shards_merge_into_the_whole_run(tmp_path: Path, monkeypatch, capsys) -> None:
    suite = make_suite(tmp_path / "repo", scripted_suite())
    whole_code, whole, _codes, parts = whole_and_shards(tmp_path, monkeypatch, suite, 3)
    sizes = [len(json.loads((p / "run.json").read_text())["shard"]["tests"]) for p in parts]
    assert sum(sizes) == TESTS
    assert min(sizes) > 0
    merged = tmp_path / "merged"
    code = cli(
        ["merge", *map(str, reversed(parts)), "-o", str(merged), "-q"],
        tmp_path / "merge-home",
        monkeypatch,
    )
    assert code == whole_code
    assert_same_run(whole, merged)
    doc = json.loads((merged / "results.json").read_text())
    # The figures are real ones, not empty blocks that happen to agree.
    assert doc["lift"]["tests"]
    assert doc["trigger"]["auroc"]["value"] is not None
    assert set(doc["reliability"]) == {"off", "on"}
    assert (merged / "report.html").is_file()
    # The merged directory is an ordinary run: `report` renders it.
    assert (
        cli(["report", str(merged), "-o", str(tmp_path / "r.md")], tmp_path / "m", monkeypatch) == 0
    )


def test_a_failing_gate_is_the_merge_exit_code(tmp_path: Path, monkeypatch) -> None:
    text = scripted_suite(12).replace("trials: 3\n", "trials: 3\nthreshold: 1.0\n")
    suite = make_suite(tmp_path / "repo", text)
    whole_code, whole, _, parts = whole_and_shards(tmp_path, monkeypatch, suite, 2)
    assert whole_code == 1  # some `on` trials say "messy"
    merged = tmp_path / "merged"
    assert cli(["merge", *map(str, parts), "-o", str(merged)], tmp_path / "m", monkeypatch) == 1
    assert_same_run(whole, merged)


def test_more_shards_than_tests_leaves_empty_shards_that_still_merge(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    suite = make_suite(tmp_path / "repo", scripted_suite(2))
    whole_code, whole, codes, parts = whole_and_shards(tmp_path, monkeypatch, suite, 4)
    empty = [p for p in parts if not json.loads((p / "run.json").read_text())["shard"]["tests"]]
    assert len(empty) == 2
    # An empty shard has nothing to judge: it passes, and its part says it is empty.
    assert all(codes[parts.index(p)] == 0 for p in empty)
    merged = tmp_path / "merged"
    assert (
        cli(["merge", *map(str, parts), "-o", str(merged), "-q"], tmp_path / "m", monkeypatch)
        == whole_code
    )
    assert_same_run(whole, merged)


def test_an_empty_shard_is_reported(tmp_path: Path, monkeypatch, capsys) -> None:
    suite = make_suite(tmp_path / "repo", scripted_suite(1))
    capsys.readouterr()
    assert cli(["run", str(suite), "--shard", "2/2"], tmp_path / "h", monkeypatch) == 0
    err = capsys.readouterr().err
    assert "shard 2/2: 0 tests (an empty shard" in err
    # The report reads a gate over no tests; the last line says that gate does not count.
    assert err.splitlines()[-1] == (
        "shard 2/2: no tests, so no gate here (exit 0); `skilleval merge` gates the whole run"
    )


@pytest.mark.parametrize("value", ["0/3", "4/3", "x", "3", "1/0", "-1/2", "1/2/3"])
def test_a_bad_shard_value_is_a_usage_error_saying_what_is_expected(
    value: str, tmp_path: Path, monkeypatch, capsys
) -> None:
    suite = make_suite(tmp_path / "repo", scripted_suite(2))
    assert cli(["run", str(suite), "--shard", value], tmp_path / "h", monkeypatch) == 2
    err = capsys.readouterr().err
    assert "K/N with whole numbers 1 <= K <= N" in err
    assert "Traceback" not in err
    assert not (tmp_path / "h" / "runs").exists()


@pytest.fixture
def three_parts(tmp_path: Path, monkeypatch) -> tuple[Path, list[Path]]:
    suite = make_suite(tmp_path / "repo", scripted_suite(9))
    parts = []
    for k in (1, 2, 3):
        home = tmp_path / f"s{k}"
        assert cli(["run", str(suite), "--shard", f"{k}/3", "-q"], home, monkeypatch) in (0, 1)
        parts.append(run_dir(home))
    return suite, parts


def refused(args: list[str], tmp_path: Path, monkeypatch, capsys) -> str:
    capsys.readouterr()
    out = tmp_path / "out"
    assert cli(["merge", *args, "-o", str(out)], tmp_path / "mh", monkeypatch) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_a_missing_shard_is_refused(three_parts, tmp_path, monkeypatch, capsys) -> None:
    _, parts = three_parts
    err = refused([str(parts[0]), str(parts[1])], tmp_path, monkeypatch, capsys)
    assert "shard 3/3 is missing" in err


def test_a_shard_given_twice_is_refused(three_parts, tmp_path, monkeypatch, capsys) -> None:
    _, parts = three_parts
    err = refused([str(p) for p in (*parts, parts[1])], tmp_path, monkeypatch, capsys)
    assert "shard 2/3 is given twice" in err


def test_a_shard_of_an_edited_suite_is_refused(three_parts, tmp_path, monkeypatch, capsys) -> None:
    suite, parts = three_parts
    skill = suite.parent / "skill" / "SKILL.md"
    skill.write_text(skill.read_text() + "\nAlso be brief.\n")
    err = refused([str(p) for p in parts], tmp_path, monkeypatch, capsys)
    assert "not the suite the shards ran" in err
    assert "digest" in err


def test_parts_of_different_runs_are_refused(three_parts, tmp_path, monkeypatch, capsys) -> None:
    suite, parts = three_parts
    other = tmp_path / "other"
    cli(["run", str(suite), "--shard", "3/3", "--seed", "5", "-q"], other, monkeypatch)
    err = refused(
        [str(parts[0]), str(parts[1]), str(run_dir(other))], tmp_path, monkeypatch, capsys
    )
    assert "not parts of one run" in err
    assert "seed" in err or "decoding" in err


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("skilleval", "0.0.0", "skilleval version"),
        ("model", {"kind": "gguf", "name": "other", "sha256": "ab"}, "model"),
        ("count", 4, "shard count"),
    ],
)
def test_a_part_that_differs_is_refused_by_name(
    key: str, value: Any, named: str, three_parts, tmp_path, monkeypatch, capsys
) -> None:
    _, parts = three_parts
    manifest = json.loads((parts[2] / "run.json").read_text())
    manifest["shard"][key] = value
    (parts[2] / "run.json").write_text(json.dumps(manifest))
    err = refused([str(p) for p in parts], tmp_path, monkeypatch, capsys)
    assert f"their {named}" in err


def test_an_unsharded_run_is_refused(three_parts, tmp_path, monkeypatch, capsys) -> None:
    suite, parts = three_parts
    cli(["run", str(suite), "-q"], tmp_path / "plain", monkeypatch)
    err = refused([str(parts[0]), str(run_dir(tmp_path / "plain"))], tmp_path, monkeypatch, capsys)
    assert "was not run with --shard" in err


def test_an_unfinished_shard_is_refused(three_parts, tmp_path, monkeypatch, capsys) -> None:
    _, parts = three_parts
    lines = (parts[1] / "results.jsonl").read_text().splitlines(keepends=True)
    (parts[1] / "results.jsonl").write_text("".join(lines[:-1]))
    err = refused([str(p) for p in parts], tmp_path, monkeypatch, capsys)
    assert "shard 2/3" in err
    assert "unfinished" in err


def test_durations_from_an_earlier_run_balance_the_shards_the_same_everywhere(
    tmp_path: Path, monkeypatch
) -> None:
    suite = make_suite(tmp_path / "repo", scripted_suite(12))
    cli(["run", str(suite), "-q"], tmp_path / "earlier", monkeypatch)
    earlier = run_dir(tmp_path / "earlier")
    split = []
    for attempt in ("a", "b"):
        tests = []
        for k in (1, 2, 3):
            home = tmp_path / f"{attempt}{k}"
            args = ["run", str(suite), "--shard", f"{k}/3", "--shard-durations", str(earlier), "-q"]
            cli(args, home, monkeypatch)
            tests.append(json.loads((run_dir(home) / "run.json").read_text())["shard"]["tests"])
        split.append(tests)
    assert split[0] == split[1]
    assert sorted(t for part in split[0] for t in part) == [f"t{i:02d}" for i in range(12)]


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda m: m["shard"].update(tests="t00"), "damaged shard block"),
        (lambda m: m["shard"].update(index=7), "damaged shard block"),
        (lambda m: m["shard"].update(model=[1]), "damaged shard block"),
        (lambda m: m["shard"].update(overrides={"seed": "x"}), "damaged shard block"),
        (lambda m: m.update(filters=3), "damaged filters"),
    ],
)
def test_a_damaged_shard_manifest_is_refused_plainly(
    damage: Any, named: str, three_parts, tmp_path, monkeypatch, capsys
) -> None:
    _, parts = three_parts
    manifest = json.loads((parts[0] / "run.json").read_text())
    damage(manifest)
    (parts[0] / "run.json").write_text(json.dumps(manifest))
    assert named in refused([str(p) for p in parts], tmp_path, monkeypatch, capsys)


@pytest.mark.parametrize(
    ("name", "content", "named"),
    [
        ("results.jsonl", b'{"test_id": 1}\n', "not a result line"),
        ("results.jsonl", b"\xff\xfe not utf-8\n", "not a result line"),
        ("shard-part.json", b'{"triggers": [{"test_id": "a"}]}', "cannot be read"),
        ("shard-part.json", b"[]", "cannot be read"),
    ],
)
def test_a_damaged_part_file_is_refused_plainly(
    name: str, content: bytes, named: str, three_parts, tmp_path, monkeypatch, capsys
) -> None:
    _, parts = three_parts
    path = parts[1] / name
    path.write_bytes(content + path.read_bytes() if name == "results.jsonl" else content)
    assert named in refused([str(p) for p in parts], tmp_path, monkeypatch, capsys)


def test_an_interrupted_shard_resumed_runs_its_own_tests_and_merges(
    tmp_path: Path, monkeypatch
) -> None:
    suite = make_suite(tmp_path / "repo", scripted_suite(12))
    whole_code, whole, _, parts = whole_and_shards(tmp_path, monkeypatch, suite, 2)
    jsonl = parts[0] / "results.jsonl"
    lines = jsonl.read_text().splitlines(keepends=True)
    jsonl.write_text("".join(lines[: len(lines) // 2]))
    (parts[0] / "results.json").unlink()
    # --resume needs no --shard: the part's manifest says which tests are its own.
    # --no-cache: the resumed calls are made again, as the whole run made them, not replayed.
    assert cli(
        ["run", "--resume", str(parts[0]), "-q", "--no-cache"], tmp_path / "shard1", monkeypatch
    ) in (0, 1)
    assert len(jsonl.read_text().splitlines()) == len(lines)
    merged = tmp_path / "merged"
    assert (
        cli(["merge", *map(str, parts), "-o", str(merged), "-q"], tmp_path / "m", monkeypatch)
        == whole_code
    )
    # A resumed run counts the calls of its last session only, so `calls` may differ.
    assert_same_run(whole, merged, calls=False)


def test_a_judged_suite_merges_with_its_judge_and_overfit_blocks(
    tmp_path: Path, monkeypatch
) -> None:
    judged = (
        scripted_suite(8)
        .replace(
            "skill: skill/SKILL.md\n",
            "skill: skill/SKILL.md\njudge:\n  provider: scripted\n  responses:\n"
            '    - match: "is tidy"\n'
            '      output: \'{"reason": "tidy", "score": 5, "pass": true}\'\n',
        )
        .replace(
            "assert: [{type: contains, value: TIDY}]",
            "assert: [{type: contains, value: TIDY}, {type: llm-rubric, value: is tidy}]",
        )
    )
    suite = make_suite(tmp_path / "repo", judged)
    whole_code, whole, _, parts = whole_and_shards(tmp_path, monkeypatch, suite, 2)
    merged = tmp_path / "merged"
    code = cli(["merge", *map(str, parts), "-o", str(merged), "-q"], tmp_path / "m", monkeypatch)
    assert code == whole_code
    a = json.loads((whole / "results.json").read_text())
    b = json.loads((merged / "results.json").read_text())
    # Each machine measures the judge's fitness once (then keeps it): only when and how long
    # it took differ.
    for doc in (a, b):
        for key in ("seconds", "measured_at"):
            doc["judge"]["fitness"].pop(key)
    assert a["judge"] == b["judge"]
    assert a["overfit"] is not None
    assert a["overfit"] == b["overfit"]
    assert b["calls"]["judge_calls"] > 0
    for key in ("judge", "timing", "run_id"):
        a.pop(key), b.pop(key)
    assert a == b


def test_parts_from_different_environments_merge_with_a_note(
    three_parts, tmp_path, monkeypatch
) -> None:
    _, parts = three_parts
    path = parts[2] / "shard-part.json"
    data = json.loads(path.read_text())
    data["environment"]["platform"] = "another machine"
    path.write_text(json.dumps(data))
    merged = tmp_path / "merged"
    assert cli(
        ["merge", *map(str, parts), "-o", str(merged), "-q"], tmp_path / "m", monkeypatch
    ) in (0, 1)
    doc = json.loads((merged / "results.json").read_text())
    assert any("different environments" in note for note in doc.get("notes", []))
    first = json.loads((parts[0] / "results.json").read_text())
    assert doc["environment"] == first["environment"]


def test_parts_from_one_environment_carry_it_without_a_note(
    three_parts, tmp_path, monkeypatch
) -> None:
    _, parts = three_parts
    merged = tmp_path / "merged"
    cli(["merge", *map(str, parts), "-o", str(merged), "-q"], tmp_path / "m", monkeypatch)
    doc = json.loads((merged / "results.json").read_text())
    assert not any("different environments" in note for note in doc.get("notes", []))


def test_shard_durations_without_a_shard_is_a_usage_error(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    suite = make_suite(tmp_path / "repo", scripted_suite(2))
    cli(["run", str(suite), "-q"], tmp_path / "earlier", monkeypatch)
    capsys.readouterr()
    args = ["run", str(suite), "--shard-durations", str(run_dir(tmp_path / "earlier"))]
    assert cli(args, tmp_path / "h", monkeypatch) == 2
    assert "give --shard K/N" in capsys.readouterr().err


def test_a_merged_run_under_the_home_is_in_the_suite_history(
    three_parts, tmp_path, monkeypatch, capsys
) -> None:
    suite, parts = three_parts
    home = tmp_path / "ci-home"
    out = home / "runs" / "20261203-070000-suite-merged"
    assert cli(["merge", *map(str, parts), "-o", str(out), "-q"], home, monkeypatch) in (0, 1)
    capsys.readouterr()
    assert cli(["history", str(suite)], home, monkeypatch) == 0
    assert out.name in capsys.readouterr().err
