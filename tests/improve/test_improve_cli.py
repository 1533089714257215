"""``skilleval improve`` from the outside: a suite and candidate folders in, exit code and
files out, on the scripted model (its rules, in ``scripted.py``, say what each candidate
does to the replies)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import scripted

from skilleval.cli import run_cli
from skilleval.util.homefile import read_sealed


def _improve(suite: Path, out: Path, *args: str) -> tuple[int, dict]:
    code = run_cli(["improve", str(suite), "-o", str(out), *args])
    report = out / "improve.json"
    return code, json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}


def _by_name(doc: dict) -> dict[str, dict]:
    return {c["name"]: c for c in doc["candidates"]}


def test_a_better_candidate_is_accepted_and_skill_md_is_left_alone(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["better", "worse", "neutral"])
    before = (tmp_path / "skill" / "SKILL.md").read_bytes()
    code, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder))
    assert code == 0
    assert doc["version"] == 1
    assert doc["kind"] == "improve"
    assert doc["decision"]["accepted"] is True
    assert doc["decision"]["edits"] == ["better"]
    assert doc["decision"]["interval"] is not None
    cands = _by_name(doc)
    assert cands["better"]["status"] == "accepted"
    assert cands["worse"]["status"] == "screened out"
    assert cands["neutral"]["status"] == "not chosen"
    # Every measured candidate carries its figures on the three sets, and its diff.
    for cand in cands.values():
        assert set(cand["figures"]) == {"train", "selection", "confirm"}
        assert cand["diff"].startswith("--- SKILL.md")
    confirmation = doc["rounds"][0]["confirmation"]
    assert confirmation["measure"] == "pass"
    assert confirmation["accepted"] is True
    assert confirmation["test"]["p_one_sided"] <= doc["settings"]["alpha_per_round"]
    improved = tmp_path / "out" / "SKILL.improved.md"
    assert improved.read_text(encoding="utf-8") == scripted.CANDIDATES["better"]
    assert (tmp_path / "skill" / "SKILL.md").read_bytes() == before
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<svg" in html
    assert "zq-format" in html
    assert "<script" not in html


def test_write_replaces_skill_md_with_the_accepted_edit(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["better"])
    code, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder), "--write")
    assert code == 0
    assert doc["decision"]["written"] is True
    assert (tmp_path / "skill" / "SKILL.md").read_text() == scripted.CANDIDATES["better"]


def test_worse_and_neutral_candidates_are_not_accepted(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["worse", "neutral"])
    before = (tmp_path / "skill" / "SKILL.md").read_bytes()
    code, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder), "--write")
    assert code == 1
    assert doc["decision"]["accepted"] is False
    assert doc["decision"]["edits"] == []
    summary = doc["decision"]["summary"]
    assert summary.startswith("no edit accepted: no candidate did better")
    assert "confirmation tests" in summary
    assert doc["sizes"]["smallest_decidable"] == 5
    assert not (tmp_path / "out" / "SKILL.improved.md").exists()
    assert (tmp_path / "skill" / "SKILL.md").read_bytes() == before


def test_a_candidate_copying_test_text_is_refused_with_the_phrase(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["leaky"])
    code, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder))
    assert code == 1
    leaky = _by_name(doc)["leaky"]
    assert leaky["status"] == "refused"
    assert "'ledger rounding bug in the invoice exporter'" in leaky["reason"]
    assert "test 'c00'" in leaky["reason"]
    assert leaky["figures"] is None  # refused before it cost a model call


def test_a_description_edit_is_judged_on_routing(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["routes"])
    code, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder))
    assert code == 0
    assert _by_name(doc)["routes"]["part"] == "description"
    assert doc["rounds"][0]["confirmation"]["measure"] == "routing"


def test_two_runs_write_the_same_report_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, folder = scripted.make(tmp_path, ["better", "worse", "neutral", "leaky"])
    assert _improve(suite, tmp_path / "a", "--candidates", str(folder))[0] == 0
    # A second home: a cold cache, so the second run really calls the model again.
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / "home2"))
    assert _improve(suite, tmp_path / "b", "--candidates", str(folder))[0] == 0
    first = (tmp_path / "a" / "improve.json").read_bytes()
    assert first == (tmp_path / "b" / "improve.json").read_bytes()
    cost = json.loads((tmp_path / "b" / "cost.json").read_text())
    assert cost["model_calls"] > 0
    assert cost["steps_resumed"] == 0


def test_the_split_is_stratified_pinned_and_grown_tests_only_train(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["neutral"])
    text = suite.read_text().replace("  - id: n00\n", "  - id: n00\n    split: confirm\n")
    suite.write_text(text)
    grow = tmp_path / "grown.yaml"
    grow.write_text(
        "version: 1\nskill: skill/SKILL.md\nmodel: {provider: scripted, default: x}\n"
        "tests:\n"
        "  - {id: g1, should_trigger: true, prompt: 'Commit message for this CHANGE: a', "
        "assert: [{type: contains, value: x}]}\n"
        "  - {id: g2, should_trigger: true, prompt: 'Commit message for this CHANGE: b', "
        "assert: [{type: contains, value: x}]}\n"
    )
    code, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder), "--grow", str(grow))
    assert code == 1
    split = doc["split"]
    assert split["grown"] == ["g1", "g2"]
    assert split["train"][-2:] == ["g1", "g2"]
    assert "g1" not in split["selection"] + split["confirm"]
    assert split["pinned"] == {"n00": "confirm"}
    assert "n00" in split["confirm"]
    everything = split["train"] + split["selection"] + split["confirm"]
    assert len(everything) == len(set(everything)) == 32
    for name in ("train", "selection", "confirm"):
        ids = split[name]
        assert any(i.startswith("c") for i in ids)
        assert any(i.startswith("n") for i in ids)
    # Another seed, another split; the same seed, the same one.
    _, again = _improve(suite, tmp_path / "out2", "--candidates", str(folder), "--seed", "7")
    assert again["split"]["confirm"] != split["confirm"]


def test_a_suite_too_small_to_split_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, folder = scripted.make(tmp_path, ["better"])
    lines = (
        suite.read_text().split("tests:\n")[0]
        + "tests:\n"
        + (
            "  - {id: only, should_trigger: true, prompt: 'Commit message for this CHANGE: a', "
            "assert: [{type: contains, value: x}]}\n"
        )
    )
    suite.write_text(lines)
    code = run_cli(
        ["improve", str(suite), "-o", str(tmp_path / "out"), "--candidates", str(folder)]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "too small to split" in err
    assert "skilleval power" in err
    assert "Traceback" not in err


def _proposing_suite(root: Path) -> Path:
    """The scripted suite whose model, asked for new instructions, proposes the marker that
    makes the commit requests pass (and has no answer for a new description)."""
    suite, _ = scripted.make(root, [])
    proposal = json.dumps(
        {
            "part": "instructions",
            "text": "Write one commit message for the change. Start it with its type (zq-format).",
            "why": "the replies lacked a type",
        }
    )
    text = suite.read_text().replace(
        "  responses:\n",
        "  responses:\n"
        f'    - {{match: "Rewrite the skill\'s instructions", output: {json.dumps(proposal)}}}\n',
    )
    suite.write_text(text)
    return suite


def test_the_proposer_sees_only_training_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _proposing_suite(tmp_path)
    code, doc = _improve(suite, tmp_path / "out", "--proposer", "suite")
    assert code == 0
    assert "asking the proposer to rewrite the instructions\n" in capsys.readouterr().err
    cand = _by_name(doc)["round1-instructions"]
    assert cand["source"] == "proposer"
    assert cand["why"] == "the replies lacked a type"
    assert cand["status"] == "accepted"
    shown = tmp_path / "out" / "candidates" / "round1-instructions" / "proposer-prompt.txt"
    prompt = shown.read_text(encoding="utf-8")
    subjects = dict(zip([f"c{i:02d}" for i in range(24)], scripted.SUBJECTS, strict=True))
    held_out = doc["split"]["selection"] + doc["split"]["confirm"]
    assert any(subjects[i] in prompt for i in doc["split"]["train"] if i in subjects)
    assert not [i for i in held_out if i in subjects and subjects[i] in prompt]


def test_a_killed_run_resumes_and_decides_as_an_uninterrupted_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, folder = scripted.make(tmp_path, ["better", "worse", "neutral"], delay_ms=20)
    args = ["improve", str(suite), "--candidates", str(folder), "--no-cache"]
    assert run_cli([*args, "-o", str(tmp_path / "whole")]) == 0
    out = tmp_path / "killed"
    env = dict(os.environ)
    child = subprocess.Popen(
        [sys.executable, "-m", "skilleval", *args, "-o", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    state = out / "improve-state.json"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            payload = (
                read_sealed(state, "an improve state", remove=False) if state.exists() else None
            )
            if payload is not None and len(json.loads(payload)["steps"]) >= 2:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the run never finished two steps")
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert not (out / "improve.json").exists()
    assert run_cli([*args, "-o", str(out)]) == 0
    assert (out / "improve.json").read_bytes() == (tmp_path / "whole" / "improve.json").read_bytes()
    resumed = json.loads((out / "cost.json").read_text())
    whole = json.loads((tmp_path / "whole" / "cost.json").read_text())
    assert resumed["steps_resumed"] >= 2
    assert resumed["model_calls"] < whole["model_calls"]


def test_a_damaged_state_is_not_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite, folder = scripted.make(tmp_path, ["better"])
    assert _improve(suite, tmp_path / "out", "--candidates", str(folder))[0] == 0
    first = (tmp_path / "out" / "improve.json").read_bytes()
    state = tmp_path / "out" / "improve-state.json"
    data = bytearray(state.read_bytes())
    data[-5] ^= 1
    state.write_bytes(bytes(data))
    capsys.readouterr()
    assert _improve(suite, tmp_path / "out", "--candidates", str(folder))[0] == 0
    assert "is damaged and was not used" in capsys.readouterr().err
    assert (tmp_path / "out" / "improve.json").read_bytes() == first


def test_json_prints_one_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite, folder = scripted.make(tmp_path, ["neutral"])
    code = run_cli(
        ["improve", str(suite), "-o", str(tmp_path / "out"), "--candidates", str(folder), "--json"]
    )
    assert code == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "improve"
    assert "model_calls" in doc["cost_this_run"]


def test_the_report_matches_its_schema(tmp_path: Path) -> None:
    import jsonschema

    from skilleval.improve.report_json import REPORT_SCHEMA

    suite, folder = scripted.make(tmp_path, ["better", "leaky"])
    _, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder))
    jsonschema.validate(doc, REPORT_SCHEMA)


def test_a_budget_stops_the_loop_at_the_same_place(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["better", "neutral"])
    code, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder), "--max-calls", "150")
    assert code == 1
    assert "budget" in doc["cost"]["stopped"]
    assert doc["cost"]["planned_requests"] <= 150
    assert [c["status"] for c in doc["candidates"]] == ["not decided", "not evaluated"]


def test_an_edit_the_overfitting_judge_flags_is_refused(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["echoing"])
    code, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder))
    assert code == 1
    echoing = _by_name(doc)["echoing"]
    assert echoing["status"] == "refused"
    assert "overfitting judge rates the suite High" in echoing["reason"]
    guards = doc["rounds"][0]["guards"]
    assert guards["lint"] == []
    assert guards["overfit"]["current"] == "Low"
    assert guards["overfit"]["refused"] is True
    # The same edit without the echo passes the judge.
    scripted.make(tmp_path / "plain", ["better"])
    code, fine = _improve(
        tmp_path / "plain" / "suite.yaml",
        tmp_path / "out2",
        "--candidates",
        str(tmp_path / "plain" / "candidates"),
    )
    assert code == 0
    assert fine["rounds"][0]["guards"]["overfit"]["candidate"] == "Low"


def test_max_candidates_and_rounds(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["better", "neutral"])
    code, doc = _improve(
        suite,
        tmp_path / "out",
        "--candidates",
        str(folder),
        "--max-candidates",
        "1",
        "--rounds",
        "2",
    )
    assert code == 0
    assert [c["name"] for c in doc["candidates"]] == ["better"]
    assert doc["settings"]["alpha_per_round"] == 0.025
    assert doc["rounds"][0]["alpha"] == 0.025
    # Folder candidates are all tried in round 1; without a proposer there is no round 2.
    assert len(doc["rounds"]) == 1
    assert "no proposer" in doc["cost"]["stopped"]


def test_sigterm_stops_with_130_and_one_line(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["better", "neutral"], delay_ms=20)
    out = tmp_path / "out"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "skilleval",
            "improve",
            str(suite),
            "--candidates",
            str(folder),
            "--no-cache",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    state = out / "improve-state.json"
    deadline = time.monotonic() + 60
    while not state.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # into the next evaluation
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130
    assert "run the same command again to resume" in err
    assert "Traceback" not in err


def test_an_edit_lint_flags_is_refused(tmp_path: Path) -> None:
    # Renamed after words of a test prompt: that prompt now names the skill (SE201).
    suite, folder = scripted.make(tmp_path, ["renamed"])
    code, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder))
    assert code == 1
    renamed = _by_name(doc)["renamed"]
    assert renamed["status"] == "refused"
    assert "lint finds what the current skill does not" in renamed["reason"]
    assert "SE201" in renamed["reason"]
    assert doc["rounds"][0]["confirmation"]["accepted"] is True  # the statistics alone would


def test_tags_are_spread_over_the_sets(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["neutral"], hard=6)
    _, doc = _improve(suite, tmp_path / "out", "--candidates", str(folder))
    split = doc["split"]
    assert split["strata"] == {"no-trigger": 6, "trigger": 18, "trigger [hard]": 6}
    hard = {f"c{i:02d}" for i in range(6)}
    for name in ("train", "selection", "confirm"):
        assert hard & set(split[name]), name


def test_rounds_propose_from_the_current_best_and_stop_when_nothing_changes(
    tmp_path: Path,
) -> None:
    suite = _proposing_suite(tmp_path)
    code, doc = _improve(suite, tmp_path / "out", "--proposer", "suite", "--rounds", "3")
    assert code == 0
    assert doc["settings"]["alpha_per_round"] == pytest.approx(0.05 / 3)
    first, second = doc["rounds"]
    assert first["accepted"] is True
    # Round 2 starts from the accepted skill, whose only training failures are misrouted
    # requests: a description is asked for, and this proposer has none to give.
    assert second["current"] != first["current"]
    assert first["current_name"] == "the suite's skill"
    assert second["current_name"] == "round1-instructions"
    names = _by_name(doc)
    assert names["round2-description"]["status"] == "refused"
    reason = names["round2-description"]["reason"]
    assert "proposer gave no usable reply" in reason
    assert "judge" not in reason, reason  # the proposer is no judge, even on its client
    assert "round 2 accepted nothing" in doc["cost"]["stopped"]
    improved = (tmp_path / "out" / "SKILL.improved.md").read_text(encoding="utf-8")
    assert "zq-format" in improved


def test_a_broken_candidate_is_reported_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, folder = scripted.make(tmp_path, ["better"])
    (folder / "broken").mkdir()
    (folder / "broken" / "SKILL.md").write_text(
        "---\nname: Bad Name\ndescription: x\n---\n\nbody\n"
    )
    code = run_cli(
        ["improve", str(suite), "-o", str(tmp_path / "out"), "--candidates", str(folder)]
    )
    assert code == 4
    err = capsys.readouterr().err
    assert "broken/SKILL.md:2:" in err
    assert "Traceback" not in err


def test_the_default_output_folder_is_under_the_home(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path / "my-skill", ["neutral"])
    assert run_cli(["improve", str(suite), "--candidates", str(folder)]) == 1
    home = Path(os.environ["SKILLEVAL_HOME"])
    assert (home / "improve" / "my-skill-suite" / "improve.json").is_file()


def test_the_split_does_not_depend_on_the_order_of_the_tests(tmp_path: Path) -> None:
    suite, folder = scripted.make(tmp_path, ["neutral"])
    _, first = _improve(suite, tmp_path / "a", "--candidates", str(folder))
    head, body = suite.read_text().split("tests:\n")
    tests = ["  - id:" + t for t in body.split("  - id:")[1:]]
    suite.write_text(head + "tests:\n" + "".join(reversed(tests)))
    _, second = _improve(suite, tmp_path / "b", "--candidates", str(folder))
    for name in ("train", "selection", "confirm"):
        assert sorted(first["split"][name]) == sorted(second["split"][name])
