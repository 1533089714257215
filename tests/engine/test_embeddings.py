"""Embeddings on the provider interface: the model-free providers' word vectors, the cache,
the OpenAI-compatible ``/embeddings`` call and the GGUF embedding path."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeProvider
from test_openai_provider import FakeServer, Reply, chat

from skilleval.engine.base import Embedder
from skilleval.engine.cache import CachingProvider, ResponseCache
from skilleval.engine.openai import OpenAIProvider
from skilleval.engine.testing import EchoProvider, ScriptedConfig, ScriptedProvider, word_vector
from skilleval.errors import CannotEmbed, ProviderError
from skilleval.judge import JudgeClient


class Counting(FakeProvider):
    """A fake that embeds and counts how many texts it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return [word_vector(t) for t in texts]

    def embed_salt(self) -> str:
        return "v1"


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    with ResponseCache(tmp_path / "cache.db") as c:
        yield c


def test_word_vectors_are_deterministic_and_close_for_shared_words() -> None:
    a, b = word_vector("Paris is big"), word_vector("big Paris IS")
    assert a == b
    assert len(a) == 64
    assert word_vector("") == [0.0] * 64
    assert sum(x * y for x, y in zip(a, word_vector("bananas"), strict=True)) == 0


def test_model_free_providers_embed() -> None:
    scripted = ScriptedProvider(ScriptedConfig())
    for provider in (EchoProvider(), scripted):
        assert isinstance(provider, Embedder)
        assert provider.embed(["a b", "c"]) == [word_vector("a b"), word_vector("c")]


def test_vectors_are_cached_per_text(cache: ResponseCache) -> None:
    inner = Counting()
    first = CachingProvider(inner, cache)
    assert first.embed(["one", "two"]) == [word_vector("one"), word_vector("two")]
    second = CachingProvider(inner, cache)
    assert second.embed(["two", "three"]) == [word_vector("two"), word_vector("three")]
    assert inner.embedded == ["one", "two", "three"]
    assert second.stats()["hits"] == 1


def test_a_vector_never_answers_a_completion_request(cache: ResponseCache) -> None:
    provider = CachingProvider(Counting(), cache)
    provider.embed(["hi"])
    assert cache.info().entries == 1


def test_a_provider_without_embed_cannot_embed() -> None:
    with pytest.raises(CannotEmbed, match="provider fake cannot embed"):
        CachingProvider(FakeProvider(), None).embed(["x"])
    with pytest.raises(CannotEmbed, match="provider fake cannot embed"):
        JudgeClient(FakeProvider()).embed(["x"])


class Broken(Counting):
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[math.nan]] * len(texts)


def test_vectors_that_are_not_finite_are_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="finite vectors"):
        CachingProvider(Broken(), None).embed(["x"])


def test_the_judge_embeds_through_its_cache(cache: ResponseCache) -> None:
    inner = Counting()
    judge = JudgeClient(CachingProvider(inner, cache))
    judge.embed(["a"])
    judge.embed(["a"])
    assert inner.embedded == ["a"]
    assert judge.stats()["embeds"] == 2


# --- OpenAI-compatible ----------------------------------------------------------------------


def embeddings(body: dict[str, Any], n: int) -> Reply:
    if "input" not in body:
        return Reply(body=chat("hello"))
    data = [{"index": i, "embedding": [float(i), 1.0]} for i in range(len(body["input"]))]
    return Reply(body={"data": list(reversed(data)), "model": body["model"]})


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.stop()


def test_openai_embeds_through_the_embeddings_endpoint(server: FakeServer) -> None:
    server.script = embeddings
    with OpenAIProvider(server.spec(), backoff_s=0.01) as provider:
        assert provider.embed(["a", "b"]) == [[0.0, 1.0], [1.0, 1.0]]
    assert server.requests[0] == {"model": "tiny", "input": ["a", "b"]}


@pytest.mark.parametrize(
    ("reply", "error", "message"),
    [
        (Reply(status=404, body={"error": "no"}), CannotEmbed, "does not serve embeddings"),
        (Reply(status=400, body={"error": {"message": "bad"}}), ProviderError, "HTTP 400"),
        (Reply(body={"data": [{"embedding": "x"}]}), ProviderError, "not a list of numbers"),
        (Reply(body={"data": []}), ProviderError, "no `data` list of 1"),
    ],
)
def test_openai_embedding_failures_are_provider_errors(
    server: FakeServer, reply: Reply, error: type[Exception], message: str
) -> None:
    server.script = lambda body, n: reply
    with (
        OpenAIProvider(server.spec(), backoff_s=0.01) as provider,
        pytest.raises(error, match=message),
    ):
        provider.embed(["a"])


# --- GGUF -----------------------------------------------------------------------------------


@pytest.mark.model
def test_the_embedded_gguf_embeds_deterministically() -> None:
    from skilleval.engine.llama import LlamaProvider
    from skilleval.engine.llama_config import LlamaConfig

    provider = LlamaProvider(LlamaConfig(n_ctx=512), Path.home())
    try:
        texts = ["Paris is the capital of France.", "The capital of France is Paris.", "Soup."]
        first = provider.embed(texts)
        again = provider.embed(texts[:1])
        assert len({len(v) for v in first}) == 1
        assert len(first[0]) > 16
        assert again[0] == first[0]

        def cos(a: list[float], b: list[float]) -> float:
            dot = sum(x * y for x, y in zip(a, b, strict=True))
            return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

        assert cos(first[0], first[1]) > cos(first[0], first[2])
        with pytest.raises(ProviderError, match="embedding context holds 512"):
            provider.embed(["word " * 2000])
    finally:
        provider.close()
