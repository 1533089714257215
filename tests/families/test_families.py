"""Chat-template families, tested from the outside on fixtures made from the embedded model.

For every family in ``family_fixtures.FAMILIES`` (Llama-3.2, Qwen2.5, Qwen3, Gemma-2, Gemma-3,
Phi-3.5, Mistral-7B-Instruct-v0.3, each with its published template and special tokens):

* the fixture is what it claims: the family's markup tokenizes to the renamed control tokens,
  and llama.cpp counts the end-of-turn token as an end of generation;
* ``skilleval run`` on a small skill suite (ON and OFF arms, routing, a judged assertion with
  the same model as judge, an agentic test with a tool) finishes with no error caused by how
  the messages were laid out for the template;
* the end-of-turn token stops generation, one request at a time (``parallel: 1``) and batched
  (``parallel: 2``): a reply that ends before ``max_tokens`` ends with reason ``stop``, never
  shows the token's text, and both paths give the same replies.

What the model answers is never checked: the weights are SmolLM2-135M under another template.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from family_fixtures import CONTROL, FAMILIES, TURN_END, Family

from skilleval.engine.llama_adapter import vocab_of

pytestmark = pytest.mark.model

NAMES = [family.name for family in FAMILIES]

SKILL = """
---
name: shouting
description: Answer in capital letters. Use when the user asks you to shout.
---

Write the whole answer in CAPITAL LETTERS.
"""

SUITE = """
version: 1
description: one suite of each kind of call, for a chat-template family
skill: skill/SKILL.md
model: {{path: "{model}", n_ctx: 2048}}
decoding: {{max_tokens: 40}}
prompts: ["{{{{q}}}}"]
tests:
  - id: shout
    should_trigger: true
    vars: {{q: "Shout hello at me."}}
    assert:
      - type: llm-rubric
        value: The reply is written in capital letters.
  - id: capital
    should_trigger: false
    vars: {{q: "What is the capital of France?"}}
    assert:
      - type: max-length
        value: 2000
  - id: lookup
    prompt: Look up the word hello, then tell me what it means.
    max_steps: 2
    tools:
      - name: dictionary
        description: Look up a word in the dictionary.
        parameters:
          type: object
          properties: {{word: {{type: string}}}}
          required: [word]
        mock:
          default: "a greeting"
    assert:
      - type: max-steps
        value: 2
"""

STOP_MAX_TOKENS = 48
STOP_SUITE = """
version: 1
description: short questions, to see each reply end
model: {{path: "{model}", n_ctx: 1024, parallel: {parallel}}}
decoding: {{max_tokens: {max_tokens}}}
prompts: ["{{{{q}}}}"]
tests:
  - {{id: capital, vars: {{q: "What is the capital of France?"}}}}
  - {{id: yes-no, vars: {{q: "Is the sky blue? Answer yes or no."}}}}
  - {{id: sum, vars: {{q: "What is 2 plus 2?"}}}}
  - {{id: colour, vars: {{q: "Answer with one word: what colour is grass?"}}}}
  - {{id: greet, vars: {{q: "Say hello."}}}}
  - {{id: square, vars: {{q: "Reply with the number only: what is 3 times 3?"}}}}
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def run(suite: Path, results: Path) -> dict[str, Any]:
    """``skilleval run`` in a process of its own, as a user runs it; the results file it wrote."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "skilleval",
            "run",
            str(suite),
            "--no-judge-check",
            "--no-cache",
            "--quiet",
            "-o",
            str(results),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    # 0 passed, 1 a gate failed, 3 some results are errors: the run finished and reported.
    assert proc.returncode in (0, 1, 3), proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(results.read_text(encoding="utf-8"))


def errors(doc: dict[str, Any]) -> Iterator[str]:
    """Every error message in a results document, each prefixed with where it was found."""
    for record in doc["records"]:
        where = f"{record['test_id']} [{record['arm']}]"
        if record["error"]:
            yield f"{where}: {record['error']}"
        for check in record["asserts"]:
            if check.get("error"):
                yield f"{where} {check['type']}: {check['error']}"
        agent = (record.get("extra") or {}).get("agent") or {}
        if agent.get("error"):
            yield f"{where} agent: {agent['error']}"
        for step in agent.get("steps", []):
            if step.get("error"):
                yield f"{where} step {step['index']}: {step['error']}"
    for decision in doc["trigger"]["tests"]:
        if decision["error"]:
            yield f"{decision['test_id']} routing: {decision['error']}"


def layout_errors(doc: dict[str, Any]) -> list[str]:
    return [message for message in errors(doc) if "chat template" in message.lower()]


@pytest.mark.parametrize("name", NAMES)
def test_fixture_carries_the_family_template_and_special_tokens(
    name: str, family_model: Callable[[str], Path]
) -> None:
    import llama_cpp  # lazy: start-up time

    family = next(f for f in FAMILIES if f.name == name)
    llm = llama_cpp.Llama(model_path=str(family_model(name)), n_ctx=256, verbose=False)
    try:
        assert llm.metadata["tokenizer.chat_template"] == family.template_text()
        ids = {text: index for index, text in family.tokens.items()}
        for markup in family.markup:
            as_special = llm.tokenize(markup.encode("utf-8"), add_bos=False, special=True)
            assert as_special == [ids[markup]], markup
            # The same text read as plain text is several ordinary tokens: the single id
            # above comes from the renamed control token, not from the text itself.
            as_text = llm.tokenize(markup.encode("utf-8"), add_bos=False, special=False)
            assert len(as_text) > 1, markup
        vocab = vocab_of(llm)
        assert llm.token_eos() == family.eos
        assert llama_cpp.llama_vocab_is_eog(vocab, TURN_END)
        if family.end_known_by == "eos":
            assert family.eos == TURN_END
        else:
            assert family.eos != TURN_END
            assert llama_cpp.llama_vocab_eot(vocab) == TURN_END
        if family.bos is not None:
            assert llm.token_bos() == family.bos
    finally:
        llm.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_skill_suite_runs_with_no_layout_error(
    name: str, family_model: Callable[[str], Path], tmp_path: Path
) -> None:
    write(tmp_path / "skill" / "SKILL.md", SKILL)
    suite = write(tmp_path / "suite.yaml", SUITE.format(model=family_model(name)))
    doc = run(suite, tmp_path / "results.json")

    found = layout_errors(doc)
    assert not found, "\n".join(found)
    arms = {(record["test_id"], record["arm"]) for record in doc["records"]}
    assert arms == {(test, arm) for test in ("shout", "capital", "lookup") for arm in ("off", "on")}
    # Routing: each decision was scored (an errored call is not "no log-probabilities").
    decisions = {decision["test_id"]: decision for decision in doc["trigger"]["tests"]}
    assert set(decisions) == {"shout", "capital"}
    for decision in decisions.values():
        assert decision["error"] is None, decision
        assert decision["scores"], decision
    # The judge graded the rubric in both arms.
    assert doc["calls"]["judge_calls"] >= 2
    rubric = [
        check
        for record in doc["records"]
        if record["test_id"] == "shout"
        for check in record["asserts"]
        if check["type"] == "llm-rubric"
    ]
    assert len(rubric) == 2
    # The agent loop took its steps in both arms.
    for record in doc["records"]:
        if record["test_id"] == "lookup":
            assert record["extra"]["agent"]["steps"], record["arm"]


def stop_run(model: Path, parallel: int, folder: Path) -> dict[str, Any]:
    suite = write(
        folder / "suite.yaml",
        STOP_SUITE.format(model=model, parallel=parallel, max_tokens=STOP_MAX_TOKENS),
    )
    doc = run(suite, folder / "results.json")
    assert doc["environment"]["model_spec"]["parallel"] == parallel
    assert doc["calls"]["cache_hits"] == 0
    return doc


def replies(doc: dict[str, Any], family: Family) -> list[tuple[str, str, str, int]]:
    """Each reply with how it ended, checked against the end-of-turn token on the way."""
    found = []
    for record in doc["records"]:
        assert record["error"] is None, f"{record['test_id']}: {record['error']}"
        stats = record["stats"]
        reason, tokens = stats["finish_reason"], stats["completion_tokens"]
        assert family.end_token not in record["output"], record["test_id"]
        if tokens < STOP_MAX_TOKENS:
            assert reason == "stop", (record["test_id"], reason, tokens)
        else:
            assert reason == "length", (record["test_id"], reason, tokens)
        found.append((record["test_id"], record["output"], reason, tokens))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_end_of_turn_token_stops_generation_alike_on_both_paths(
    name: str, family_model: Callable[[str], Path], tmp_path: Path
) -> None:
    family = next(f for f in FAMILIES if f.name == name)
    model = family_model(name)
    one_at_a_time = replies(stop_run(model, 1, tmp_path / "parallel-1"), family)
    batched = replies(stop_run(model, 2, tmp_path / "parallel-2"), family)

    # The model emitted the end-of-turn token in some reply, and it ended the reply there;
    # without it as an end of generation every reply would run to max_tokens.
    assert any(reason == "stop" for _, _, reason, _ in one_at_a_time), one_at_a_time
    assert batched == one_at_a_time


@pytest.mark.slow
def test_an_end_of_turn_token_llama_cpp_does_not_know_runs_every_reply_to_max_tokens(
    family_model: Callable[[str], Path], tmp_path: Path
) -> None:
    """The control that shows the stop test can fail: the same weights, the same questions,
    but the token they end a turn with is not an end of generation."""
    import llama_cpp  # lazy: start-up time

    model = family_model(CONTROL.name)
    llm = llama_cpp.Llama(model_path=str(model), n_ctx=256, verbose=False)
    try:
        assert not llama_cpp.llama_vocab_is_eog(llm._model.vocab, TURN_END)
    finally:
        llm.close()
    ended = replies(stop_run(model, 1, tmp_path), CONTROL)
    assert all(reason == "length" for _, _, reason, _ in ended), ended


@pytest.mark.parametrize("name", NAMES)
def test_choices_are_scored_up_to_the_template_s_end_of_turn_token(
    name: str, family_model: Callable[[str], Path], tmp_path: Path
) -> None:
    """Learned from the template, whatever the end-of-sequence token is (Gemma's ``<eos>``
    and Phi's ``<|endoftext|>`` are not the tokens that end their turns)."""
    from skilleval.engine.llama import LlamaConfig, LlamaProvider

    family = next(f for f in FAMILIES if f.name == name)
    provider = LlamaProvider(LlamaConfig(path=str(family_model(name))), tmp_path)
    try:
        assert provider.turn_end() == TURN_END, family.end_token
    finally:
        provider.close()


def test_a_template_that_prints_today_s_date_sees_a_fixed_one(
    family_model: Callable[[str], Path], tmp_path: Path
) -> None:
    """Llama 3.x's template writes today's date into every system turn; a prompt must not
    change from one day to the next, so the template sees :data:`TEMPLATE_DATE`."""
    import datetime as dt

    from skilleval.engine.base import Message
    from skilleval.engine.llama import LlamaConfig, LlamaProvider
    from skilleval.engine.llama_template import TEMPLATE_DATE

    assert "strftime_now" in FAMILIES[0].template_text()
    provider = LlamaProvider(LlamaConfig(path=str(family_model("llama3"))), tmp_path)
    try:
        llm = provider._load()
        prompt = provider._prompt_tokens([Message("system", "S"), Message("user", "U")])
        text = bytes(llm.detokenize(prompt, special=True)).decode("utf-8")
    finally:
        provider.close()
    assert TEMPLATE_DATE.strftime("%d %b %Y") in text
    assert dt.date.today().strftime("%d %b %Y") not in text
