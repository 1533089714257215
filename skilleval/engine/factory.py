"""Build the provider a suite asks for. Heavy backends are imported only when used."""

from __future__ import annotations

from pathlib import Path

from skilleval.engine.base import ModelSpec, Provider


def create_provider(spec: ModelSpec, *, home: Path, jobs: int = 1) -> Provider:
    """A provider for ``spec``; nothing is loaded until its first call."""
    if spec.kind == "echo":
        from skilleval.engine.testing import EchoProvider

        return EchoProvider()
    if spec.kind == "scripted":
        from skilleval.engine.testing import ScriptedProvider

        return ScriptedProvider(spec)
    if spec.kind == "openai":
        from skilleval.engine.openai import OpenAIProvider

        return OpenAIProvider(spec, jobs=max(1, jobs))
    from skilleval.engine.llama import LlamaProvider

    return LlamaProvider(spec, home)
