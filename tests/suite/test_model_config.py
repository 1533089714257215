"""``model:`` and ``judge:``: shorthands, and each provider's own keys, defaults and checks."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from skilleval.errors import Location
from skilleval.plugins import PluginManager
from skilleval.suite.files import Reader
from skilleval.suite.model_config import ModelSpec, parse_model
from skilleval.suite.yamlio import load_yaml


@pytest.fixture(scope="module")
def manager() -> PluginManager:
    built = PluginManager()
    built.load_builtins()
    return built


def parse(
    manager: PluginManager, tmp_path: Path, yaml: str | None = None, raw: Any = None
) -> tuple[ModelSpec | None, list[str]]:
    doc = None
    where = Location("command line")
    if yaml is not None:
        path = tmp_path / "suite.yaml"
        path.write_text(textwrap.dedent(yaml), encoding="utf-8")
        doc = load_yaml(path)
        raw, where = doc.data["model"], doc.at(["model"])
    spec, diags = parse_model(
        raw,
        key="model",
        where=where,
        doc=doc,
        manager=manager,
        base_dir=tmp_path,
        reader=Reader(),
    )
    return spec, [str(d).replace(str(tmp_path) + "/", "") for d in diags]


@pytest.mark.parametrize(
    ("raw", "kind", "described"),
    [
        (None, "gguf", {"path": "default", "n_ctx": 4096, "threads": None, "n_batch": 512}),
        ("default", "gguf", {"path": "default", "n_ctx": 4096, "threads": None, "n_batch": 512}),
        ("echo", "echo", {}),
        ("scripted", "scripted", {}),
        (
            {"base_url": "http://h:1/v1/", "model": "m"},
            "openai",
            {"base_url": "http://h:1/v1", "model": "m"},
        ),
    ],
)
def test_shorthands_and_implied_providers(
    manager: PluginManager, tmp_path: Path, raw: Any, kind: str, described: dict[str, Any]
) -> None:
    spec, problems = parse(manager, tmp_path, raw=raw)
    assert problems == []
    assert spec is not None
    assert spec.kind == kind
    assert {k: v for k, v in spec.to_json().items() if k not in ("provider", "label")} == described


def test_a_bare_path_is_a_gguf_file_relative_to_the_suite(
    manager: PluginManager, tmp_path: Path
) -> None:
    spec, _ = parse(manager, tmp_path, raw="models/m.gguf")
    assert spec is not None
    assert spec.kind == "gguf"
    assert spec.label == "models/m.gguf"
    assert spec.to_json()["path"] == str(tmp_path / "models/m.gguf")


def test_a_url_says_how_to_write_a_server(manager: PluginManager, tmp_path: Path) -> None:
    _, problems = parse(manager, tmp_path, raw="http://h:8000/v1")
    assert problems == [
        "command line: error: to use a server, write "
        "`model: {provider: openai, base_url: http://h:8000/v1, model: NAME}`"
    ]


def test_keys_of_another_provider_are_refused_at_their_position(
    manager: PluginManager, tmp_path: Path
) -> None:
    _, problems = parse(manager, tmp_path, "model:\n  provider: gguf\n  base_url: http://x\n")
    assert problems == ["suite.yaml:3:3: error: 'base_url' does not apply to the gguf provider"]


def test_an_implied_provider_checks_its_values_with_positions(
    manager: PluginManager, tmp_path: Path
) -> None:
    _, problems = parse(manager, tmp_path, "model:\n  path: m.gguf\n  n_ctx: 10\n")
    assert problems == ["suite.yaml:3:10: error: 'n_ctx' must be >= 256, not 10"]


def test_openai_needs_its_url_and_model(manager: PluginManager, tmp_path: Path) -> None:
    _, problems = parse(manager, tmp_path, raw="openai")
    assert problems == [
        "command line: error: the openai provider needs `base_url:`",
        "command line: error: the openai provider needs `model:`",
    ]


def test_a_mapping_without_a_provider_lists_the_ways_to_name_one(
    manager: PluginManager, tmp_path: Path
) -> None:
    _, problems = parse(manager, tmp_path, "model:\n  n_ctx: 512\n")
    assert problems == [
        "suite.yaml:2:3: error: `model:` needs `provider:` (echo, exec, gguf, http, openai, python or scripted) "
        "or `path:` or `url:` or `base_url:`"
    ]


def test_scripted_rules_are_checked_where_the_model_is(
    manager: PluginManager, tmp_path: Path
) -> None:
    _, problems = parse(
        manager,
        tmp_path,
        "model:\n  provider: scripted\n  responses:\n    - {match: '(', output: x}\n",
    )
    assert len(problems) == 1
    assert problems[0].startswith(
        "suite.yaml:2:3: error: scripted response `match` is not a valid regex"
    )


@pytest.mark.parametrize(
    ("raw", "host", "base_url", "name"),
    [
        ("ollama:qwen2.5:7b", None, "http://127.0.0.1:11434/v1", "qwen2.5:7b"),
        ("lmstudio:qwen2.5-7b-instruct", None, "http://127.0.0.1:1234/v1", "qwen2.5-7b-instruct"),
        ("ollama:m", "gpu-box", "http://gpu-box:11434/v1", "m"),
        ("ollama:m", "10.0.0.5:8080", "http://10.0.0.5:8080/v1", "m"),
        ("ollama:m", "https://ollama.example", "https://ollama.example/v1", "m"),
        ("ollama:m", "[::1]", "http://[::1]:11434/v1", "m"),
        # LM Studio has no variable of its own; OLLAMA_HOST is Ollama's only.
        ("lmstudio:m", "gpu-box", "http://127.0.0.1:1234/v1", "m"),
        ("ollama:chat:llama3", None, "http://127.0.0.1:11434/v1", "llama3"),  # promptfoo's id
    ],
)
def test_local_server_shorthands_are_the_openai_provider_at_their_port(
    manager: PluginManager,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    raw: str,
    host: str | None,
    base_url: str,
    name: str,
) -> None:
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    if host is None:
        monkeypatch.delenv("OLLAMA_HOST", raising=False)
    else:
        monkeypatch.setenv("OLLAMA_HOST", host)
    spec, problems = parse(manager, tmp_path, raw=raw)
    assert problems == []
    assert spec is not None
    assert spec.kind == "openai"
    assert spec.label == raw
    assert spec.to_json() == {
        "provider": "openai",
        "label": raw,
        "base_url": base_url,
        "model": name,
    }


def test_an_hf_reference_is_a_gguf_path_kept_as_written(
    manager: PluginManager, tmp_path: Path
) -> None:
    spec, problems = parse(manager, tmp_path, raw="hf:acme/Tiny-GGUF:Q4_K_M@v1")
    assert problems == []
    assert spec is not None
    assert spec.kind == "gguf"
    assert spec.to_json()["path"] == "hf:acme/Tiny-GGUF:Q4_K_M@v1"


def test_a_bad_hf_reference_in_a_mapping_points_at_its_path_key(
    manager: PluginManager, tmp_path: Path
) -> None:
    _, problems = parse(manager, tmp_path, "model:\n  path: hf:acme\n")
    assert problems == [
        "suite.yaml:2:9: error: 'hf:acme': 'acme' is not OWNER/REPO; write "
        "hf:OWNER/REPO/FILE.gguf or hf:OWNER/REPO:QUANT (QUANT like Q4_K_M), "
        "optionally ending in @REVISION"
    ]


def test_ollama_base_url_wins_over_ollama_host(
    manager: PluginManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "host-a:1")
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://host-b:2/")
    spec, _ = parse(manager, tmp_path, raw="ollama:m")
    assert spec is not None
    assert spec.to_json()["base_url"] == "http://host-b:2/v1"
