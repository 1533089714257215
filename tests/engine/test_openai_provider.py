"""The OpenAI-compatible provider against a tiny scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from skilleval.engine.base import Message, Provider, Request
from skilleval.engine.openai import OpenAIProvider, chat_completions_url
from skilleval.engine.openai_provider import OpenAIConfig
from skilleval.errors import ProviderError


@dataclass
class Reply:
    """What the scripted server does with one request."""

    status: int = 200
    body: Any = None
    """A JSON-able value, or ``bytes`` sent verbatim."""
    headers: dict[str, str] = field(default_factory=dict)
    action: str = "reply"
    """``reply``, ``hang`` (never answer) or ``drop`` (close without answering)."""
    delay_s: float = 0.0


Script = Callable[[dict[str, Any], int], Reply]


def chat(
    text: str, *, finish_reason: str = "stop", prompt: int = 7, completion: int = 3
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


class FakeServer:
    """A scripted OpenAI-compatible endpoint; records every request body and header set."""

    def __init__(self) -> None:
        self.script: Script = lambda body, n: Reply(body=chat("hello"))
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def spec(self, **overrides: Any) -> OpenAIConfig:
        fields: dict[str, Any] = {
            "base_url": self.base_url,
            "model": "tiny",
            "timeout_s": 2.0,
            "retries": 3,
        }
        return OpenAIConfig(**(fields | overrides))

    def stop(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                body = json.loads(raw)
                with server.lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    n = len(server.requests)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._answer(server.script(body, n))
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def _answer(self, reply: Reply) -> None:
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.action == "hang":
                    server.release.wait(10)
                    self.close_connection = True
                    return
                if reply.action == "drop":
                    self.close_connection = True
                    return
                if isinstance(reply.body, bytes):
                    payload = reply.body
                    kind = "text/html"
                else:
                    payload = json.dumps(reply.body).encode()
                    kind = "application/json"
                self.send_response(reply.status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.stop()


def provider(server: FakeServer, *, jobs: int = 4, **spec: Any) -> OpenAIProvider:
    return OpenAIProvider(server.spec(**spec), jobs=jobs, backoff_s=0.01)


def ask(text: str = "hi", **fields: Any) -> Request:
    return Request(messages=(Message("user", text),), **fields)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# --- the happy path -------------------------------------------------------------------


def test_plain_reply_sends_decoding_and_reads_usage(server: FakeServer) -> None:
    with provider(server) as p:
        assert isinstance(p, Provider)
        out = p.complete(ask(max_tokens=32, temperature=0.5, top_p=0.9, seed=11))
    assert out.text == "hello"
    assert out.finish_reason == "stop"
    assert (out.prompt_tokens, out.completion_tokens, out.tokens_evaluated) == (7, 3, 7)
    assert out.latency_ms > 0
    sent = server.requests[0]
    assert sent["model"] == "tiny"
    assert sent["messages"] == [{"role": "user", "content": "hi"}]
    assert (sent["max_tokens"], sent["temperature"], sent["top_p"], sent["seed"]) == (
        32,
        0.5,
        0.9,
        11,
    )
    assert "response_format" not in sent
    assert "authorization" not in server.headers[0]


def test_api_key_is_sent_as_bearer(server: FakeServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLEVAL_TEST_KEY", "sk-123")
    with provider(server, api_key_env="SKILLEVAL_TEST_KEY") as p:
        p.complete(ask())
    assert server.headers[0]["authorization"] == "Bearer sk-123"


def test_missing_api_key_env_is_reported(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderError, match=r"^environment variable OPENAI_API_KEY is not set$"):
        provider(server, api_key_env="OPENAI_API_KEY")


def test_identity_needs_no_network_and_salt_is_empty() -> None:
    spec = OpenAIConfig(base_url="http://127.0.0.1:9/v1/", model="qwen")
    with OpenAIProvider(spec) as p:
        ident = p.identity()
        assert (ident.kind, ident.name) == ("openai", "qwen")
        assert ident.details == {"base_url": "http://127.0.0.1:9/v1"}
        assert p.cache_salt(ask()) == ""
        assert p.max_concurrency == 4


@pytest.mark.parametrize(
    ("base_url", "endpoint"),
    [
        ("http://h:8000", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/v1", "http://h:8000/v1/chat/completions"),
        ("https://h/openai/v1/", "https://h/openai/v1/chat/completions"),
        ("http://h/v1/chat/completions", "http://h/v1/chat/completions"),
    ],
)
def test_base_url_forms(base_url: str, endpoint: str) -> None:
    assert chat_completions_url(base_url) == endpoint


def test_bad_base_url_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="not an http"):
        OpenAIProvider(OpenAIConfig(base_url="localhost:8000", model="m"))


# --- failures ---------------------------------------------------------------------------


def test_connection_refused() -> None:
    port = free_port()
    spec = OpenAIConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m")
    with OpenAIProvider(spec, backoff_s=0.01) as p, pytest.raises(ProviderError) as err:
        p.complete(ask())
    assert str(err.value) == (
        f"cannot reach http://127.0.0.1:{port}/v1/chat/completions: "
        "connection refused — is the server running?"
    )


def test_500_storm_gives_up_after_retries(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(500, {"error": {"message": "kaboom"}})
    with provider(server, retries=3) as p, pytest.raises(ProviderError) as err:
        p.complete(ask())
    assert "server kept failing: HTTP 500 x4 (last: kaboom)" in str(err.value)
    assert "\n" not in str(err.value)
    assert len(server.requests) == 4


def test_429_then_success_is_retried(server: FakeServer) -> None:
    server.script = lambda body, n: (
        Reply(429, {"error": {"message": "slow down"}}) if n == 1 else Reply(body=chat("ok"))
    )
    with provider(server) as p:
        assert p.complete(ask()).text == "ok"
    assert len(server.requests) == 2


def test_dropped_connection_is_retried(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(action="drop") if n < 3 else Reply(body=chat("back"))
    with provider(server) as p:
        assert p.complete(ask()).text == "back"
    assert len(server.requests) == 3


def test_dropped_connections_exhaust_retries(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(action="drop")
    with provider(server, retries=1) as p, pytest.raises(ProviderError) as err:
        p.complete(ask())
    assert "server kept failing: connection reset x2" in str(err.value)


def test_other_4xx_is_not_retried(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(400, {"error": {"message": "max_tokens too large"}})
    with provider(server) as p, pytest.raises(ProviderError) as err:
        p.complete(ask())
    assert str(err.value).endswith("HTTP 400: max_tokens too large")
    assert len(server.requests) == 1


def test_unknown_model(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(
        404,
        {"error": {"message": "The model `nope` does not exist.", "code": "model_not_found"}},
    )
    with provider(server, model="nope") as p, pytest.raises(ProviderError) as err:
        p.complete(ask())
    assert "server has no model 'nope' (HTTP 404: The model `nope` does not exist.)" in str(
        err.value
    )
    assert len(server.requests) == 1


def test_wrong_path_404_hints_at_base_url(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(404, b"<html>Not Found</html>")
    with provider(server) as p, pytest.raises(ProviderError, match="is base_url an OpenAI"):
        p.complete(ask())


def test_invalid_json_body(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(200, b"<html>proxy says hi</html>")
    with provider(server) as p, pytest.raises(ProviderError) as err:
        p.complete(ask())
    assert "reply is not JSON (HTTP 200, text/html): '<html>proxy says hi</html>'" in str(err.value)


def test_json_without_choices(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(body={"object": "list", "data": []})
    with provider(server) as p, pytest.raises(ProviderError, match=r"no choices\[0\]"):
        p.complete(ask())


def test_hang_times_out(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(action="hang")
    start = time.perf_counter()
    with provider(server, timeout_s=0.3, retries=1) as p, pytest.raises(ProviderError) as err:
        p.complete(ask())
    assert str(err.value).endswith("/v1/chat/completions: no reply within 0.3 s (2 attempts)")
    assert time.perf_counter() - start < 1.5


# --- constrained replies ------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def test_json_schema_is_sent_in_openai_form_and_validated(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(body=chat('{"answer": 4}'))
    with provider(server) as p:
        out = p.complete(ask(json_schema=SCHEMA))
    assert json.loads(out.text) == {"answer": 4}
    assert server.requests[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": SCHEMA, "strict": True},
    }


def test_reply_breaking_the_schema_is_an_error(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(body=chat('{"answer": "four"}'))
    with provider(server) as p, pytest.raises(ProviderError) as err:
        p.complete(ask(json_schema=SCHEMA))
    assert "server ignored the JSON schema: at answer: 'four' is not of type 'integer'" in str(
        err.value
    )


def test_length_finish_is_returned_unparsed(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(body=chat('{"answ', finish_reason="length"))
    with provider(server) as p:
        out = p.complete(ask(json_schema=SCHEMA, max_tokens=3))
    assert out.truncated
    assert out.text == '{"answ'


def _llama_cpp_python(body: dict[str, Any], n: int) -> Reply:
    """Mimics llama-cpp-python's server, which only knows the json_object form."""
    fmt = body.get("response_format")
    if fmt and fmt["type"] != "json_object":
        return Reply(
            500,
            {
                "error": {
                    "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', "
                    "'type'), 'msg': \"Input should be 'text' or 'json_object'\"}]",
                    "type": "internal_server_error",
                }
            },
        )
    return Reply(body=chat('{"answer": 4}'))


def test_auto_falls_back_to_json_object_once(server: FakeServer) -> None:
    server.script = _llama_cpp_python
    with provider(server) as p:
        assert json.loads(p.complete(ask(json_schema=SCHEMA)).text) == {"answer": 4}
        assert p.response_format_style == "json_object"
        p.complete(ask(json_schema=SCHEMA))
    types = [r["response_format"]["type"] for r in server.requests]
    assert types == ["json_schema", "json_object", "json_object"]
    assert server.requests[1]["response_format"]["schema"] == SCHEMA


def test_pinned_json_schema_style_does_not_fall_back(server: FakeServer) -> None:
    server.script = _llama_cpp_python
    p = OpenAIProvider(server.spec(retries=0), response_format="json_schema", backoff_s=0.01)
    with p, pytest.raises(ProviderError, match="server kept failing: HTTP 500 x1"):
        p.complete(ask(json_schema=SCHEMA))


def test_choice_returns_the_option(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(body=chat('{"choice": "no"}'))
    with provider(server) as p:
        out = p.complete(ask(choices=("yes", "no")))
    assert out.text == "no"
    assert out.choice_scores is None
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["choice"] == {"type": "string", "enum": ["yes", "no"]}


def test_choice_outside_the_options_is_an_error(server: FakeServer) -> None:
    server.script = lambda body, n: Reply(body=chat("maybe"))
    with provider(server) as p, pytest.raises(ProviderError, match="is not one of"):
        p.complete(ask(choices=("yes", "no")))


# --- concurrency ----------------------------------------------------------------------------


def test_shared_client_is_thread_safe(server: FakeServer) -> None:
    def echo(body: dict[str, Any], n: int) -> Reply:
        return Reply(body=chat(body["messages"][0]["content"].upper()), delay_s=0.15)

    server.script = echo
    words = [f"word{i}" for i in range(12)]
    start = time.perf_counter()
    with provider(server, jobs=4) as p, ThreadPoolExecutor(p.max_concurrency) as pool:
        texts = list(pool.map(lambda w: p.complete(ask(w)).text, words))
    elapsed = time.perf_counter() - start
    assert texts == [w.upper() for w in words]
    assert server.max_in_flight >= 2
    assert elapsed < 12 * 0.15


# --- the server's prompt cache ------------------------------------------------------------


def test_deterministic_requests_ask_the_server_not_to_reuse_its_prompt_cache(
    server: FakeServer,
) -> None:
    with provider(server) as p:
        p.complete(ask())  # greedy: temperature 0
        p.complete(ask(temperature=0.7, seed=3))
    assert server.requests[0]["cache_prompt"] is False
    assert "cache_prompt" not in server.requests[1]


@pytest.mark.parametrize("setting", [True, False])
def test_a_cache_prompt_setting_is_sent_as_given(server: FakeServer, setting: bool) -> None:
    with provider(server, cache_prompt=setting) as p:
        p.complete(ask())
        p.complete(ask(temperature=0.7))
    assert [r["cache_prompt"] for r in server.requests] == [setting, setting]


def test_a_server_that_refuses_the_field_is_asked_again_without_it_once(
    server: FakeServer,
) -> None:
    def openai_like(body: dict[str, Any], n: int) -> Reply:
        if "cache_prompt" in body:
            message = "Unrecognized request argument supplied: cache_prompt"
            return Reply(status=400, body={"error": {"message": message}})
        return Reply(body=chat("fine"))

    server.script = openai_like
    with provider(server) as p:
        assert p.complete(ask()).text == "fine"
        assert p.complete(ask()).text == "fine"
    assert ["cache_prompt" in r for r in server.requests] == [True, False, False]


def test_a_lone_surrogate_in_a_reply_is_replaced_and_counted(server: FakeServer) -> None:
    # json.dumps writes "\ud800" as the escape a server would send; json.loads revives it.
    server.script = lambda body, n: Reply(body=chat("tide \ud800 pool"))
    with provider(server) as p:
        out = p.complete(ask())
    assert out.text == "tide \ufffd pool"
    assert out.replaced == 1
    out.text.encode("utf-8")
