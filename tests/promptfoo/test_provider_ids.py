"""promptfoo provider ids read as skilleval models: each id means what it meant there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from skilleval.errors import DiagnosticsError
from skilleval.promptfoo.provider_ids import OLLAMA_URL, translate
from skilleval.suite.load import Overrides, load_suite

NO_KEYS: dict[str, str] = {}


@pytest.mark.parametrize(
    ("entry", "model", "label"),
    [
        ("echo", "echo", "echo"),
        ("file://models/m.gguf", "models/m.gguf", "models/m.gguf"),
        ("m.gguf", "m.gguf", "m.gguf"),
        ("llama:./m.gguf", "./m.gguf", "./m.gguf"),
        (
            "ollama:chat:llama3.2",
            {"provider": "openai", "base_url": OLLAMA_URL, "model": "llama3.2"},
            "ollama:llama3.2",
        ),
        (
            "ollama:llama3.2:1b",
            {"provider": "openai", "base_url": OLLAMA_URL, "model": "llama3.2:1b"},
            "ollama:llama3.2:1b",
        ),
        (
            {"id": "openai:chat:qwen", "config": {"apiBaseUrl": "http://127.0.0.1:9/v1/"}},
            {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "qwen"},
            "qwen",
        ),
        (
            {"id": "openai:gpt-4o", "label": "big", "config": {"apiBaseUrl": "http://h/v1"}},
            {"provider": "openai", "base_url": "http://h/v1", "model": "gpt-4o"},
            "big",
        ),
    ],
)
def test_local_ids(entry: Any, model: Any, label: str) -> None:
    read = translate(entry, NO_KEYS)
    assert read.refusal is None
    assert read.model == model
    assert read.label == label


def test_ollama_base_url_from_the_environment() -> None:
    read = translate("ollama:chat:phi3", {"OLLAMA_BASE_URL": "http://10.0.0.2:11434"})
    assert read.model == {
        "provider": "openai",
        "base_url": "http://10.0.0.2:11434/v1",
        "model": "phi3",
    }


@pytest.mark.parametrize(
    ("pid", "env", "url"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY", "https://api.openai.com/v1"),
        ("openai:chat:gpt-4o-mini", "OPENAI_API_KEY", "https://api.openai.com/v1"),
        ("anthropic:messages:claude-sonnet-4", "ANTHROPIC_API_KEY", "https://api.anthropic.com/v1"),
        ("mistral:mistral-small", "MISTRAL_API_KEY", "https://api.mistral.ai/v1"),
    ],
)
def test_hosted_ids_need_their_key(pid: str, env: str, url: str) -> None:
    refused = translate(pid, NO_KEYS)
    assert refused.model is None
    assert refused.refusal is not None
    assert env in refused.refusal
    accepted = translate(pid, {env: "secret"})
    assert accepted.refusal is None
    assert isinstance(accepted.model, dict)
    assert accepted.model["base_url"] == url
    assert accepted.model["api_key_env"] == env
    # The key itself is never copied into the settings (or the results).
    assert "secret" not in str(accepted.model)


@pytest.mark.parametrize(
    "entry",
    [
        "file://provider.js",
        "bedrock:claude",
        "http",
        {"id": "https://example.com/api", "config": {"transformRequest": "prompt"}},
        {},
        "",
    ],
)
def test_ids_skilleval_cannot_run_are_refused_with_an_alternative(entry: Any) -> None:
    read = translate(entry, NO_KEYS)
    assert read.model is None
    assert read.refusal


@pytest.mark.parametrize(
    ("entry", "model"),
    [
        ("python:provider.py", {"provider": "python", "path": "provider.py"}),
        (
            "file://app/provider.py:answer",
            {"provider": "python", "path": "app/provider.py", "function": "answer"},
        ),
        ("exec: ./run.sh --fast", {"provider": "exec", "command": "./run.sh --fast"}),
        (
            {
                "id": "https",
                "config": {"url": "https://example.com/api", "body": {"q": "{{prompt}}"}},
            },
            {"provider": "http", "url": "https://example.com/api", "body": {"q": "{{prompt}}"}},
        ),
        (
            {
                "id": "https://example.com/api",
                "config": {
                    "method": "GET",
                    "transformResponse": "json.a",
                    "validateStatus": "status < 500",
                },
            },
            {
                "provider": "http",
                "url": "https://example.com/api",
                "method": "GET",
                "transform_response": "json.a",
                "validate_status": "status < 500",
            },
        ),
    ],
)
def test_the_users_own_application_is_read_as_the_provider_of_the_same_meaning(
    entry: Any, model: dict[str, Any]
) -> None:
    read = translate(entry, NO_KEYS)
    assert read.refusal is None
    assert read.model == model
    assert read.uses_config


@pytest.mark.parametrize("env", ["GOOGLE_API_KEY", "GEMINI_API_KEY"])
def test_a_gemini_key_is_read_from_either_name_promptfoo_reads(env: str) -> None:
    refused = translate("google:gemini-2.0-flash", NO_KEYS)
    assert refused.refusal is not None
    assert "GOOGLE_API_KEY or GEMINI_API_KEY" in refused.refusal
    accepted = translate("google:gemini-2.0-flash", {env: "secret"})
    assert isinstance(accepted.model, dict)
    assert accepted.model["api_key_env"] == env


def test_a_key_set_in_the_configs_env_counts(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = tmp_path / "promptfooconfig.yaml"
    body = "providers: [openai:gpt-4o-mini]\nprompts: [hi]\ntests:\n  - vars: {}\n"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(DiagnosticsError, match="OPENAI_API_KEY is not set"):
        load_suite(path, Overrides(entry_points=False))
    path.write_text("env: {OPENAI_API_KEY: sk-test}\n" + body, encoding="utf-8")
    suite, _ = load_suite(path, Overrides(entry_points=False))
    assert suite.tests
