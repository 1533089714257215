"""perplexity on an OpenAI-compatible server: the run asks a server on 127.0.0.1 for token
log-probabilities where a test has such a check, reads them from the reply, and a server that
gives none makes the check an error that says why."""

from __future__ import annotations

import json
import math
import textwrap
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from skilleval.cli import run_cli

Answer = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


def _reply(text: str, logprobs: Any = None) -> dict[str, Any]:
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": "stop",
    }
    if logprobs is not None:
        choice["logprobs"] = logprobs
    return {
        "choices": [choice],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }


class Server:
    """An OpenAI-style endpoint on 127.0.0.1 that answers with ``answer`` and keeps every
    request body."""

    def __init__(self, answer: Answer) -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                status, reply = answer(body)
                payload = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], Server]]:
    started: list[Server] = []

    def start(answer: Answer) -> Server:
        started.append(Server(answer))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def _run(
    tmp_path: Path, server: Server, capsys: pytest.CaptureFixture[str]
) -> dict[str, dict[str, Any]]:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        textwrap.dedent(
            f"""
            version: 1
            model: {{provider: openai, base_url: "{server.base_url}", model: tiny, retries: 0}}
            tests:
              - id: scored
                prompt: Capital of France?
                assert:
                  - {{type: perplexity, threshold: 1.5}}
                  - {{type: perplexity-score, threshold: 0.4}}
              - id: plain
                prompt: Say hi
                assert: [{{type: contains, value: i}}]
            """
        ).lstrip(),
        encoding="utf-8",
    )
    code = run_cli(["run", str(suite), "--json", "--no-cache", "--no-entry-points"])
    captured = capsys.readouterr()
    assert code in (0, 1, 3), captured.err  # 3: a check that errs stops the gate
    assert "Traceback" not in captured.err
    return {r["test_id"]: r for r in json.loads(captured.out)["records"]}


def _by_prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def test_the_server_is_asked_for_them_and_they_are_read_from_its_reply(
    tmp_path: Path, serve: Callable[[Answer], Server], capsys: pytest.CaptureFixture[str]
) -> None:
    content = [{"token": "Par", "logprob": -0.1}, {"token": "is", "logprob": -0.3}]
    server = serve(lambda body: (200, _reply("Paris", {"content": content})))
    records = _run(tmp_path, server, capsys)
    asked = {_by_prompt(b): b.get("logprobs") for b in server.requests}
    # Only the test with a perplexity check asks for them.
    assert asked == {"Capital of France?": True, "Say hi": None}
    scored = records["scored"]["asserts"]
    assert [a["status"] for a in scored] == ["pass", "pass"]
    assert f"{math.exp(0.2):.2f}" in scored[0]["reason"]
    assert scored[1]["score"] == pytest.approx(1 / (1 + math.exp(0.2)), abs=1e-6)


def test_the_completions_form_of_the_reply_is_read_too(
    tmp_path: Path, serve: Callable[[Answer], Server], capsys: pytest.CaptureFixture[str]
) -> None:
    form = {"tokens": ["Ly", "on"], "token_logprobs": [-2.0, -3.0]}
    server = serve(lambda body: (200, _reply("Lyon", form)))
    scored = _run(tmp_path, server, capsys)["scored"]["asserts"]
    assert [a["status"] for a in scored] == ["fail", "fail"]
    assert scored[1]["score"] == pytest.approx(1 / (1 + math.exp(2.5)), abs=1e-6)


def test_a_server_that_gives_none_makes_the_check_an_error_saying_why(
    tmp_path: Path, serve: Callable[[Answer], Server], capsys: pytest.CaptureFixture[str]
) -> None:
    server = serve(lambda body: (200, _reply("Paris")))
    records = _run(tmp_path, server, capsys)
    scored = records["scored"]["asserts"]
    assert [a["status"] for a in scored] == ["error", "error"]
    assert "they were asked for (`logprobs: true`)" in scored[0]["reason"]
    assert "held none" in scored[0]["reason"]
    assert records["plain"]["asserts"][0]["status"] == "pass"


def test_a_server_that_refuses_the_field_is_asked_again_without_it(
    tmp_path: Path, serve: Callable[[Answer], Server], capsys: pytest.CaptureFixture[str]
) -> None:
    def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if "logprobs" in body:
            refusal = "Unrecognized request argument supplied: logprobs"
            return 400, {"error": {"message": refusal, "type": "invalid_request_error"}}
        return 200, _reply("Paris")

    server = serve(answer)
    records = _run(tmp_path, server, capsys)
    scored = records["scored"]["asserts"]
    assert [a["status"] for a in scored] == ["error", "error"]
    assert "refused the request for them" in scored[0]["reason"]
    assert records["scored"]["output"] == "Paris"
    assert [
        (b.get("logprobs"), b.get("top_logprobs"))
        for b in server.requests
        if "France" in _by_prompt(b)
    ] == [(True, 1), (None, None)]
