"""A model server on this machine that is not running is said once, before the first test
(engine/openai.py ``check``), not as one error per test."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import pytest

from tests.cli.isolated import run_isolated


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("model", ["ollama:qwen2.5:0.5b", "lmstudio:qwen"])
def test_a_local_server_that_is_not_running_stops_the_run_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    port = free_port()
    monkeypatch.setenv("OLLAMA_BASE_URL", f"http://127.0.0.1:{port}/v1")
    suite = tmp_path / "suite.yaml"
    if model.startswith("lmstudio"):
        model = f"{{provider: openai, base_url: 'http://localhost:{port}/v1', model: qwen}}"
    tests = "".join(
        f"  - vars: {{q: t{i}}}\n    assert: [{{type: contains, value: t}}]\n" for i in range(5)
    )
    suite.write_text(
        textwrap.dedent(f"""\
            version: 1
            model: {model}
            prompts: ["{{{{q}}}}"]
            tests:
            """)
        + tests,
        encoding="utf-8",
    )
    done = run_isolated(["run", str(suite)], tmp_path, time_limit=20)
    assert not done.problems(), done.err
    assert done.code == 3
    lines = [line for line in done.err.splitlines() if line.strip()]
    assert len(lines) == 1, done.err
    assert lines[0].startswith("error: suite.yaml:2:")
    assert "cannot reach the model server at http://" in lines[0]
    assert f":{port}/v1: connection refused" in lines[0]
