"""`skilleval watch`: real edits in a temporary folder, re-runs checked by their call counts."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fakes import COMMIT_SKILL

from skilleval.report.rerun import reuse_lines, reuse_of
from skilleval.results.load import rebuild_from_jsonl
from skilleval.results.model import Calls, JudgeInfo
from skilleval.results.records import CallStats, Record
from skilleval.watch import Outcome, Watcher, WatchOptions

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 20.0

SKILL = COMMIT_SKILL

SKILL_SUITE = """
version: 1
type: capability
skill: skill/SKILL.md
model:
  provider: scripted
  responses:
    - arm: router
      match: "commit message"
      output: commit-message
    - arm: on
      output: "feat: add the thing"
    - arm: off
      output: "Sure! Here is a message about your change."
tests:
  - id: change-0
    should_trigger: true
    prompt: "Write a commit message for change 0"
    assert: [{type: regex, value: "^feat: "}]
  - id: change-1
    should_trigger: true
    prompt: "Write a commit message for change 1"
    assert: [{type: regex, value: "^feat: "}]
  - id: change-2
    should_trigger: true
    prompt: "Write a commit message for change 2"
    assert: [{type: regex, value: "^feat: "}]
  - id: control-0
    should_trigger: false
    prompt: "What is 2 plus 2?"
"""

PLUGIN = '''
from skilleval import Check, Verdict, assertion


@assertion("shouts")
def shouts(check: Check) -> Verdict:
    """The output is in capital letters."""
    return Verdict(passed=check.output.isupper(), reason="checked the case")
'''

PLUGIN_SUITE = """
version: 1
plugins: [asserts/]
model:
  provider: scripted
  responses:
    - id: loud
      output: "HELLO THERE"
    - id: quiet
      output: "hello there"
tests:
  - id: loud
    prompt: Greet me loudly.
    assert: [{type: shouts}]
  - id: quiet
    prompt: Greet me quietly.
    assert: [{type: not-shouts}]
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def wait_for(condition: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)


class Session:
    """A watcher serving in a thread, with its printed output collected."""

    def __init__(self, watcher: Watcher, lines: list[str]) -> None:
        self.watcher = watcher
        self.lines = lines

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def next_outcome(self, after: int) -> Outcome:
        """Wait for outcome number ``after + 1`` and return it."""
        wait_for(lambda: len(self.watcher.outcomes) > after, f"a re-run; output:\n{self.text}")
        return self.watcher.outcomes[after]

    def count(self) -> int:
        return len(self.watcher.outcomes)


@pytest.fixture
def watch() -> Iterator[Callable[..., Session]]:
    started: list[tuple[Watcher, threading.Thread]] = []
    failures: list[BaseException] = []

    def begin(*suites: Path, initial_run: bool = True) -> Session:
        lines: list[str] = []
        options = WatchOptions(debounce_s=0.1, poll_s=0.1)
        watcher = Watcher(list(suites), options, echo=lines.append)
        watcher.start(initial_run=initial_run)

        def serve() -> None:
            try:
                watcher.serve()
            except BaseException as exc:
                failures.append(exc)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        started.append((watcher, thread))
        wait_for(watcher.ready.is_set, "the observer to start")
        return Session(watcher, lines)

    yield begin
    for watcher, thread in started:
        watcher.stop()
        thread.join(timeout=10)
        watcher.close()
        assert not thread.is_alive(), "the watch loop did not stop"
    assert not failures, failures


def by_arm(outcome: Outcome) -> dict[str, tuple[int, int]]:
    """Per arm: (outputs served from the cache, outputs the model produced)."""
    assert outcome.reuse is not None
    return {a.arm: (a.reused, a.made) for a in outcome.reuse.arms}


def uncached_tests(outcome: Outcome) -> set[str]:
    assert outcome.run is not None
    return {r.test_id for r in outcome.run.records if r.stats is None or not r.stats.cached}


@pytest.fixture
def skill_suite(tmp_path: Path) -> Path:
    write(tmp_path / "skill" / "SKILL.md", SKILL)
    return write(tmp_path / "suite.yaml", SKILL_SUITE)


@pytest.fixture
def plugin_suite(tmp_path: Path) -> Path:
    write(tmp_path / "asserts" / "case.py", PLUGIN)
    return write(tmp_path / "suite.yaml", PLUGIN_SUITE)


# -- incremental re-runs ---------------------------------------------------------------------


def test_skill_edit_reruns_only_the_on_arm_and_prints_the_delta(
    watch: Callable[..., Session], skill_suite: Path
) -> None:
    session = watch(skill_suite)
    first = session.watcher.outcomes[0]
    assert first.kind == "ran"
    assert by_arm(first) == {"off": (0, 4), "on": (0, 4)}
    n = session.count()
    skill = skill_suite.parent / "skill" / "SKILL.md"
    edit(skill, "summary.", "summary. Keep it under 50 characters.")
    rerun = session.next_outcome(n)
    assert rerun.kind == "ran"
    assert rerun.changed == (skill.resolve(),)
    assert by_arm(rerun) == {"off": (4, 0), "on": (0, 4)}
    assert rerun.run is not None
    assert {r.arm for r in rerun.run.records if r.stats is not None and not r.stats.cached} == {
        "on"
    }
    assert rerun.reuse is not None
    # The router sees only the skill's name and description, which did not change.
    assert (rerun.reuse.other_calls, rerun.reuse.other_hits) == (0, 4)
    assert rerun.comparison is not None
    assert first.run is not None
    assert rerun.comparison.a.run_id == first.run.run.run_id
    text = session.text
    assert "[off] 4 reused, 0 recomputed" in text
    assert "[on] 0 reused, 4 recomputed: change-0, change-1, change-2, control-0" in text
    assert "no test flipped" in text
    assert "trigger accuracy 100.0% → 100.0% (±0.0 pp)" in text
    report = rerun.run.run_dir.root / "report.html"
    assert report.is_file()
    assert "<html" in report.read_text(encoding="utf-8")[:200].lower()


def test_description_edit_flips_trigger_accuracy_in_the_delta(
    watch: Callable[..., Session], skill_suite: Path
) -> None:
    session = watch(skill_suite)
    n = session.count()
    edit(skill_suite, 'match: "commit message"', 'match: "commit message for change [01]"')
    rerun = session.next_outcome(n)
    assert rerun.comparison is not None
    assert rerun.comparison.trigger is not None
    accuracy = rerun.comparison.trigger[0]
    assert (accuracy.before, accuracy.after) == (1.0, 0.75)
    assert "trigger accuracy 100.0% → 75.0% (−25.0 pp)" in session.text


def test_editing_one_test_reruns_only_that_test(
    watch: Callable[..., Session], skill_suite: Path
) -> None:
    session = watch(skill_suite)
    n = session.count()
    edit(skill_suite, "for change 1", "for change number one")
    rerun = session.next_outcome(n)
    assert rerun.kind == "ran"
    assert uncached_tests(rerun) == {"change-1"}
    assert by_arm(rerun) == {"off": (3, 1), "on": (3, 1)}
    assert rerun.reuse is not None
    assert rerun.reuse.other_calls == 1  # routing change-1's new prompt


def test_plugin_edit_regrades_without_calling_the_generator(
    watch: Callable[..., Session], plugin_suite: Path
) -> None:
    session = watch(plugin_suite)
    first = session.watcher.outcomes[0]
    assert first.run is not None
    assert first.run.exit_code == 0
    n = session.count()
    plugin = plugin_suite.parent / "asserts" / "case.py"
    # A different size too: a same-second, same-size edit could be served from stale bytecode.
    edit(plugin, "check.output.isupper()", "check.output.islower() and True")
    rerun = session.next_outcome(n)
    assert rerun.kind == "ran"
    assert rerun.reuse is not None
    assert rerun.reuse.model_calls == 0
    assert rerun.reuse.cache_hits == 2
    assert uncached_tests(rerun) == set()
    assert rerun.comparison is not None
    flipped = {(t.test_id, t.change) for t in rerun.comparison.tests}
    assert flipped == {("loud", "newly_failing"), ("quiet", "newly_failing")}
    assert "loud [default] pass → fail" in session.text


def test_reuse_counts_come_from_the_records_and_the_run_totals(tmp_path: Path) -> None:
    def record(test_id: str, arm: str, cached: bool | None) -> Record:
        failed = Record.failed((test_id, arm, 0), "", "no output")
        if cached is None:
            return failed
        stats = CallStats("stop", 0, 0, 0.0, 0.0, cached, 0)
        return replace(failed, status="pass", error=None, stats=stats)

    (tmp_path / "results.jsonl").write_text("", encoding="utf-8")
    run = replace(
        rebuild_from_jsonl(tmp_path / "results.jsonl"),
        arms=("off", "on"),
        records=(
            record("a", "off", True),
            record("a", "on", False),
            record("b", "off", True),
            record("b", "on", None),  # failed before generation: neither
        ),
        calls=Calls(model_calls=3, cache_hits=2, judge_calls=4, judge_cache_hits=1),
        judge=JudgeInfo(same_as_generator=False),
    )
    reuse = reuse_of(run)
    assert [(a.arm, a.reused, a.made, a.recomputed) for a in reuse.arms] == [
        ("off", 2, 0, ()),
        ("on", 0, 1, ("a",)),
    ]
    assert (reuse.other_calls, reuse.other_hits) == (2, 0)
    assert "    judge model: 4 made, 1 from the cache" in reuse_lines(reuse)
    run = replace(run, judge=JudgeInfo(same_as_generator=True))
    # A judge sharing the model still counts its own calls, as results.json does.
    assert "    judging: 4 made, 1 from the cache" in reuse_lines(reuse_of(run))
    assert reuse_of(replace(run, judge=None)).judge_calls is None


def test_watch_counts_judge_calls_as_the_run_does(tmp_path: Path) -> None:
    """The judge's calls are on their own line, equal to results.json's ``calls``."""
    write(tmp_path / "skill" / "SKILL.md", SKILL)
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        skill: skill/SKILL.md
        model: echo
        tests:
          - id: a
            should_trigger: true
            prompt: "Write a commit message for a fix"
            assert: [{type: llm-rubric, value: It is a commit message.}]
        """,
    )
    lines: list[str] = []
    watcher = Watcher([suite], WatchOptions(home=tmp_path / "home"), echo=lines.append)
    try:
        watcher.start()
        edit(suite, "It is a commit message.", "It is a commit message for git.")
        watcher.handle([suite])
        (outcome,) = watcher.run_once()
    finally:
        watcher.close()
    assert outcome.run is not None
    calls = outcome.run.run.calls
    assert calls is not None
    assert calls.judge_calls
    text = lines[-1]
    assert (
        f"judging: {calls.judge_calls} made, {calls.judge_cache_hits or 0} from the cache" in text
    )
    assert f"model calls: {calls.model_calls} made, {calls.cache_hits} from the cache" in text
    assert "routing and judging" not in text


def test_still_invalid_shows_the_diagnostics_of_the_latest_save(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        """
        version: 1
        model: echo
        tests:
          - prompt: hi
            assert: [{type: contans, value: hi}]
          - prompt: there
            assert: [{type: contains, value: there}]
        """,
    )
    lines: list[str] = []
    watcher = Watcher([suite], WatchOptions(home=tmp_path / "home"), echo=lines.append)
    try:
        watcher.start()
        assert "1 error;" in lines[-1]
        edit(suite, "type: contains, value: there", "type: equalz, value: there")
        watcher.handle([suite])
        watcher.run_once()
        assert "still invalid: 2 errors" in lines[-1]
        assert "'contans'" in lines[-1]
        assert "'equalz'" in lines[-1]
        edit(suite, "  - prompt: there", "  - prompt: everyone")
        watcher.handle([suite])
        watcher.run_once()
        assert "still invalid: the same 2 errors" in lines[-1]
    finally:
        watcher.close()


# -- saving ----------------------------------------------------------------------------------


def test_an_atomic_save_triggers_a_run(watch: Callable[..., Session], skill_suite: Path) -> None:
    session = watch(skill_suite)
    n = session.count()
    skill = skill_suite.parent / "skill" / "SKILL.md"
    tmp = skill.with_name(".SKILL.md.swp")
    tmp.write_text(skill.read_text(encoding="utf-8") + "\nAlways use a scope.\n", encoding="utf-8")
    os.replace(tmp, skill)
    rerun = session.next_outcome(n)
    assert rerun.kind == "ran"
    assert rerun.changed == (skill.resolve(),)
    assert by_arm(rerun)["on"] == (0, 4)


def test_a_burst_of_events_makes_one_run(tmp_path: Path, skill_suite: Path) -> None:
    watcher = Watcher([skill_suite], WatchOptions(debounce_s=0.3), echo=lambda _: None)
    watcher.start()
    skill = (tmp_path / "skill" / "SKILL.md").resolve()
    now = time.monotonic()
    for _ in range(5):
        assert watcher.handle([skill]) == 1
    assert not watcher.due(now)
    assert watcher.due(now + 1.0)
    assert len(watcher.run_once()) == 1
    assert not watcher.due(now + 2.0)
    assert watcher.run_once() == []
    watcher.close()


def test_events_on_unread_files_are_ignored(tmp_path: Path, plugin_suite: Path) -> None:
    watcher = Watcher([plugin_suite], WatchOptions(home=tmp_path / ".skilleval"))
    watcher.start(initial_run=False)
    ignored = [
        tmp_path / "README.md",
        tmp_path / "asserts" / "__pycache__" / "case.cpython-311.pyc",
        tmp_path / "asserts" / ".#case.py",
        tmp_path / ".skilleval" / "runs" / "x" / "results.json",
    ]
    assert watcher.handle(ignored) == 0
    assert watcher.handle([tmp_path / "asserts" / "new.py"]) == 1
    watcher.close()


def test_reads_and_folder_updates_are_not_changes(tmp_path: Path, plugin_suite: Path) -> None:
    from watchdog.events import (
        DirModifiedEvent,
        FileClosedNoWriteEvent,
        FileMovedEvent,
        FileOpenedEvent,
    )

    from skilleval.watch.observe import event_forwarder

    watcher = Watcher([plugin_suite], echo=lambda _: None)
    watcher.start(initial_run=False)
    forward = event_forwarder(watcher)
    suite = str(plugin_suite)
    for event in (FileOpenedEvent(suite), FileClosedNoWriteEvent(suite)):
        forward.dispatch(event)
    forward.dispatch(DirModifiedEvent(str(tmp_path / "asserts")))
    assert not watcher.due(time.monotonic() + 10)
    forward.dispatch(FileMovedEvent(str(tmp_path / "suite.yaml.tmp"), suite))
    assert watcher.due(time.monotonic() + 10)
    watcher.close()


def test_without_an_initial_run_the_first_change_prints_the_full_report(
    skill_suite: Path,
) -> None:
    lines: list[str] = []
    watcher = Watcher([skill_suite], echo=lines.append)
    assert watcher.start(initial_run=False) == []
    assert "valid: 4 test(s); waiting for a change" in "\n".join(lines)
    skill = skill_suite.parent / "skill" / "SKILL.md"
    edit(skill, "summary.", "summary!")
    assert watcher.handle([skill]) == 1
    (outcome,) = watcher.run_once()
    watcher.close()
    assert outcome.kind == "ran"
    assert outcome.comparison is None
    text = "\n".join(lines)
    assert "model calls: 12 made, 0 from the cache" in text
    assert "REPORTED (capability suite, no gate)" in text


def test_a_run_never_triggers_another(
    watch: Callable[..., Session],
    plugin_suite: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The home (runs, report.html, cache.db) inside the watched folder, and bytecode written
    # into the plugin folder: neither may count as an edit.
    monkeypatch.setenv("SKILLEVAL_HOME", str(tmp_path / ".skilleval"))
    session = watch(plugin_suite)
    n = session.count()
    edit(plugin_suite.parent / "asserts" / "case.py", "checked the case", "looked at it")
    assert session.next_outcome(n).kind == "ran"
    time.sleep(0.6)  # several debounce periods and poll passes
    assert session.count() == n + 1


# -- errors ----------------------------------------------------------------------------------


def test_a_broken_edit_prints_diagnostics_and_a_fix_runs_again(
    watch: Callable[..., Session], skill_suite: Path
) -> None:
    session = watch(skill_suite)
    good = session.watcher.outcomes[0]
    n = session.count()
    edit(skill_suite, "type: regex", "type: regx")
    broken = session.next_outcome(n)
    assert broken.kind == "invalid"
    assert next(d.message for d in broken.diagnostics).startswith(
        "unknown assertion type 'regx'; did you mean 'regex'?"
    )
    assert re.search(r"suite\.yaml:\d+:\d+: error: unknown assertion type 'regx'", session.text)
    assert "keeping the last good results" in session.text
    edit(skill_suite, "type: regx", "type: regex")
    fixed = session.next_outcome(n + 1)
    assert fixed.kind == "ran"
    assert fixed.comparison is not None
    assert good.run is not None
    assert fixed.comparison.a.run_id == good.run.run.run_id
    assert fixed.reuse is not None
    assert fixed.reuse.model_calls == 0


def test_a_plugin_that_crashes_on_import_is_reported_and_watching_goes_on(
    watch: Callable[..., Session], plugin_suite: Path
) -> None:
    session = watch(plugin_suite)
    n = session.count()
    plugin = plugin_suite.parent / "asserts" / "case.py"
    original = plugin.read_text(encoding="utf-8")
    plugin.write_text(original + "\nraise RuntimeError('half-written edit')\n", encoding="utf-8")
    broken = session.next_outcome(n)
    assert broken.kind == "invalid"
    assert "plugin failed to import: RuntimeError: half-written edit" in session.text
    assert "Traceback" not in session.text
    plugin.write_text(original + "\n# fixed\n", encoding="utf-8")
    assert session.next_outcome(n + 1).kind == "ran"


def test_a_new_file_in_a_plugin_folder_is_picked_up(
    watch: Callable[..., Session], plugin_suite: Path
) -> None:
    session = watch(plugin_suite)
    n = session.count()
    extra = plugin_suite.parent / "asserts" / "extra.py"
    write(extra, PLUGIN.replace('"shouts"', '"whispers"').replace("def shouts", "def whispers"))
    rerun = session.next_outcome(n)
    assert rerun.kind == "ran"
    assert rerun.changed == (extra.resolve(),)
    assert rerun.run is not None
    environment = rerun.run.run.environment
    assert environment is not None
    names = {t.name for t in environment.registry}
    assert "whispers" in names


def test_a_deleted_file_is_reported_and_its_return_runs_again(
    watch: Callable[..., Session], skill_suite: Path
) -> None:
    session = watch(skill_suite)
    n = session.count()
    skill = skill_suite.parent / "skill" / "SKILL.md"
    text = skill.read_text(encoding="utf-8")
    skill.unlink()
    gone = session.next_outcome(n)
    assert gone.kind == "deleted"
    assert "skill/SKILL.md was deleted; watching for it to come back" in session.text
    skill.write_text(text + "\nMention the ticket number.\n", encoding="utf-8")
    back = session.next_outcome(n + 1)
    assert back.kind == "ran"
    assert "skill/SKILL.md is back" in session.text
    assert by_arm(back) == {"off": (4, 0), "on": (0, 4)}


def test_a_folder_that_goes_away_and_returns_is_watched_again(
    watch: Callable[..., Session], skill_suite: Path
) -> None:
    session = watch(skill_suite)
    n = session.count()
    folder = skill_suite.parent / "skill"
    moved = folder.rename(skill_suite.parent / "skill-old")
    assert session.next_outcome(n).kind == "deleted"
    moved.rename(folder)
    assert session.next_outcome(n + 1).kind == "ran"


def test_only_suites_that_read_the_file_rerun(
    watch: Callable[..., Session], tmp_path: Path, skill_suite: Path
) -> None:
    other = write(tmp_path / "other" / "suite.yaml", PLUGIN_SUITE)
    write(tmp_path / "other" / "asserts" / "case.py", PLUGIN)
    session = watch(skill_suite, other)
    n = session.count()
    assert n == 2
    edit(other.parent / "asserts" / "case.py", "checked the case", "looked at the case")
    rerun = session.next_outcome(n)
    assert rerun.suite == other.resolve()
    wait_for(lambda: not session.watcher.due(time.monotonic() + 10), "the queue to drain")
    assert session.count() == n + 1


# -- the command -----------------------------------------------------------------------------


def test_the_command_reruns_on_a_save_and_exits_0_on_ctrl_c(
    skill_suite: Path, tmp_path: Path
) -> None:
    log = tmp_path / "stderr.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("w", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skilleval", "watch", str(skill_suite), "--debounce", "0.1"],
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            cwd=tmp_path,
        )

    def text() -> str:
        return log.read_text(encoding="utf-8")

    def rerun_done() -> bool:
        after = text().partition("← skill/SKILL.md")[2]
        return "report:" in after

    try:
        wait_for(lambda: "watching 2 file(s)" in text(), f"the watch to start:\n{text()}")
        edit(skill_suite.parent / "skill" / "SKILL.md", "summary.", "summary, lower case.")
        wait_for(rerun_done, "the re-run")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
            print(text())
    assert proc.returncode == 0, text()
    assert out == b""  # everything for humans goes to stderr
    assert "[off] 4 reused, 0 recomputed" in text()
    assert text().rstrip().endswith("stopped")
    assert "Traceback" not in text()


# -- the embedded model ----------------------------------------------------------------------

MODEL_SUITE = """
version: 1
skill: skill/SKILL.md
model: default
decoding: {max_tokens: 8}
prompts: ["Answer briefly. {{q}}"]
tests:
  - id: capital
    vars: {q: "What is the capital of France?"}
    assert: [{type: icontains, value: paris}]
  - id: colour
    vars: {q: "What colour is the sky on a clear day?"}
    assert: [{type: icontains, value: blue}]
"""

SHOUTING = """
---
name: shouting
description: Answer in capital letters. Use when the user asks you to shout.
---

Write the whole answer in CAPITAL LETTERS.
"""


@pytest.mark.model
def test_skill_edit_on_the_embedded_model_recomputes_only_the_on_arm(
    watch: Callable[..., Session], tmp_path: Path
) -> None:
    write(tmp_path / "skill" / "SKILL.md", SHOUTING)
    suite = write(tmp_path / "suite.yaml", MODEL_SUITE)
    session = watch(suite)
    first = session.watcher.outcomes[0]
    assert first.kind == "ran", session.text
    assert by_arm(first) == {"off": (0, 2), "on": (0, 2)}
    n = session.count()
    edit(tmp_path / "skill" / "SKILL.md", "CAPITAL LETTERS.", "CAPITAL LETTERS, and be brief.")
    rerun = session.next_outcome(n)
    assert rerun.kind == "ran", session.text
    assert by_arm(rerun) == {"off": (2, 0), "on": (0, 2)}
    assert rerun.reuse is not None
    assert rerun.reuse.model_calls == 2


JUDGED = """
version: 1
type: capability
model: echo
tests:
  - id: a
    prompt: "Say hi"
    assert: [{type: llm-rubric, value: It greets.}]
"""


def test_watch_measures_the_judge_once_and_can_skip_it(tmp_path: Path) -> None:
    suite = write(tmp_path / "suite.yaml", JUDGED)
    lines: list[str] = []
    watcher = Watcher([suite], WatchOptions(home=tmp_path / "home"), echo=lines.append)
    try:
        (first,) = watcher.start()
        edit(suite, "It greets.", "It says hello.")
        watcher.handle([suite])
        (second,) = watcher.run_once()
    finally:
        watcher.close()
    measured = [line for line in lines if "judge fitness: grading 73" in line]
    assert len(measured) == 1  # the second run reads the measurement back
    for outcome in (first, second):
        assert outcome.run is not None
        judge = outcome.run.run.judge
        assert judge is not None
        assert judge.fitness is not None
        assert judge.fitness.status == "unqualified"
    skipped = Watcher(
        [suite], WatchOptions(home=tmp_path / "other", judge_check=False), echo=lines.append
    )
    try:
        (outcome,) = skipped.start()
    finally:
        skipped.close()
    assert outcome.run is not None
    assert outcome.run.run.judge is not None
    fitness = outcome.run.run.judge.fitness
    assert fitness is not None
    assert fitness.status == "not checked"


def test_watch_once_takes_no_judge_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from skilleval.cli import run_cli

    suite = write(tmp_path / "suite.yaml", JUDGED)
    assert run_cli(["watch", "--once", "--no-judge-check", str(suite)]) == 0
    err = capsys.readouterr().err
    assert "judge not checked" in err
    assert "judge fitness: grading" not in err
