"""The response cache and the caching provider, with a fake model (no GGUF needed)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from skilleval.engine.base import Completion, Message, ModelIdentity, Provider, Request
from skilleval.engine.cache import CachingProvider, ResponseCache, cache_key
from skilleval.errors import ProviderError

ROOT = Path(__file__).resolve().parent.parent
IDENTITY = ModelIdentity(kind="gguf", name="fake.gguf", sha256="ab" * 32, size=1)


class FakeProvider:
    """Answers ``reply <trial>``; can be told to fail or truncate."""

    max_concurrency = 1

    def __init__(self, *, fail: bool = False, truncate: bool = False) -> None:
        self.fail = fail
        self.truncate = truncate
        self.calls = 0

    def identity(self) -> ModelIdentity:
        return IDENTITY

    def complete(self, request: Request) -> Completion:
        self.calls += 1
        if self.fail:
            raise ProviderError("model exploded")
        return Completion(
            text=f"reply {request.trial}",
            finish_reason="length" if self.truncate else "stop",
            prompt_tokens=7,
            completion_tokens=3,
            latency_ms=12.5,
            tokens_evaluated=5,
            choice_scores={"a": -0.5, "b": -2.0} if request.choices else None,
        )

    def cache_salt(self, request: Request) -> str:
        return ""

    def close(self) -> None:
        pass


def _request(**kw: object) -> Request:
    base = Request(messages=(Message("system", "be brief"), Message("user", "hi")))
    return replace(base, **kw)  # type: ignore[arg-type]


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[ResponseCache]:
    c = ResponseCache(tmp_path / "cache.db")
    yield c
    c.close()


def test_fake_provider_satisfies_protocol() -> None:
    assert isinstance(FakeProvider(), Provider)
    assert isinstance(CachingProvider(FakeProvider(), None), Provider)


def test_key_is_stable_and_hex() -> None:
    assert cache_key(IDENTITY, _request(), "") == cache_key(IDENTITY, _request(), "")
    assert len(cache_key(IDENTITY, _request(), "")) == 64


@pytest.mark.parametrize(
    "change",
    [
        {"trial": 1},
        {"seed": 1},
        {"temperature": 0.7},
        {"top_p": 0.9},
        {"max_tokens": 17},
        {"messages": (Message("system", "be brief"), Message("user", "hi!"))},
        {"messages": (Message("user", "be brief"), Message("user", "hi"))},
        {"json_schema": {"type": "object"}},
        {"choices": ("yes", "no")},
    ],
)
def test_every_input_changes_the_key(change: dict[str, object]) -> None:
    assert cache_key(IDENTITY, _request(**change), "") != cache_key(IDENTITY, _request(), "")


def test_model_and_salt_change_the_key() -> None:
    other = replace(IDENTITY, sha256="cd" * 32)
    assert cache_key(other, _request(), "") != cache_key(IDENTITY, _request(), "")
    assert cache_key(IDENTITY, _request(), "t1") != cache_key(IDENTITY, _request(), "t2")


def test_choice_order_matters_but_test_id_does_not() -> None:
    a = cache_key(IDENTITY, _request(choices=("yes", "no")), "")
    assert a != cache_key(IDENTITY, _request(choices=("no", "yes")), "")
    assert a == cache_key(
        IDENTITY, _request(choices=("yes", "no"), test_id="x", purpose="judge"), ""
    )


def test_hit_returns_cached_with_zero_model_calls(cache: ResponseCache) -> None:
    fake = FakeProvider()
    first = CachingProvider(fake, cache).complete(_request())
    assert not first.cached
    assert fake.calls == 1

    again = FakeProvider()
    provider = CachingProvider(again, cache)
    hit = provider.complete(_request())
    assert again.calls == 0
    assert (provider.calls, provider.hits) == (0, 1)
    assert hit.cached
    assert hit.text == first.text
    # The original cost is kept so reports can still show it.
    assert (hit.latency_ms, hit.prompt_tokens, hit.completion_tokens) == (12.5, 7, 3)
    assert hit.tokens_evaluated == 0


def test_choice_scores_round_trip(cache: ResponseCache) -> None:
    provider = CachingProvider(FakeProvider(), cache)
    provider.complete(_request(choices=("a", "b")))
    hit = provider.complete(_request(choices=("a", "b")))
    assert hit.cached
    assert hit.choice_scores == {"a": -0.5, "b": -2.0}


def test_trials_never_collapse(cache: ResponseCache) -> None:
    fake = FakeProvider()
    provider = CachingProvider(fake, cache)
    texts = [provider.complete(_request(trial=i)).text for i in range(3)]
    assert texts == ["reply 0", "reply 1", "reply 2"]
    assert (fake.calls, provider.hits) == (3, 0)
    assert cache.info().entries == 3


def test_errors_are_never_cached(cache: ResponseCache) -> None:
    provider = CachingProvider(FakeProvider(fail=True), cache)
    for _ in range(2):
        with pytest.raises(ProviderError, match="exploded"):
            provider.complete(_request())
    assert (provider.calls, provider.hits) == (2, 0)
    assert cache.info().entries == 0


def test_truncated_constrained_replies_are_never_cached(cache: ResponseCache) -> None:
    fake = FakeProvider(truncate=True)
    provider = CachingProvider(fake, cache)
    schema = {"type": "object"}
    assert provider.complete(_request(json_schema=schema)).truncated
    assert provider.complete(_request(json_schema=schema)).truncated
    assert provider.complete(_request(choices=("a", "b"))).truncated
    assert fake.calls == 3
    assert cache.info().entries == 0
    assert cache.put("k", Completion(text="cut", finish_reason="length")) is False


def test_free_text_that_reaches_max_tokens_is_cached(cache: ResponseCache) -> None:
    """Hitting the budget is a normal, reproducible end of a free-text reply."""
    fake = FakeProvider(truncate=True)
    provider = CachingProvider(fake, cache)
    assert provider.complete(_request()).truncated
    assert provider.complete(_request()).cached
    assert fake.calls == 1


def test_no_cache_always_calls_and_counts_tokens() -> None:
    fake = FakeProvider()
    provider = CachingProvider(fake, None)
    provider.complete(_request())
    provider.complete(_request())
    assert fake.calls == 2
    assert provider.stats() == {
        "calls": 2,
        "hits": 0,
        "prompt_tokens": 14,
        "completion_tokens": 6,
        "tokens_evaluated": 10,
    }


def test_info_and_clear(cache: ResponseCache, tmp_path: Path) -> None:
    empty = cache.info()
    assert (empty.entries, empty.path) == (0, tmp_path / "cache.db")
    for i in range(5):
        cache.put(f"k{i}", Completion(text="x" * 1000))
    info = cache.info()
    assert info.entries == 5
    assert info.size_bytes > 0
    assert info.to_json()["entries"] == 5
    assert cache.clear() == 5
    assert cache.info().entries == 0
    assert cache.get("k0") is None


def test_persists_across_instances(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.db") as a:
        a.put("k", Completion(text="kept", latency_ms=3.0))
    with ResponseCache(tmp_path / "c.db") as b:
        got = b.get("k")
    assert got is not None
    assert (got.text, got.latency_ms, got.cached) == ("kept", 3.0, True)


def test_not_a_database_is_a_provider_error(tmp_path: Path) -> None:
    bad = tmp_path / "cache.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ProviderError, match="delete it"):
        ResponseCache(bad)


WRITER = textwrap.dedent(
    """
    import sys, time
    from skilleval.engine.base import Completion
    from skilleval.engine.cache import ResponseCache

    path, name, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
    while time.time() < start:
        time.sleep(0.001)
    cache = ResponseCache(path)
    for i in range(300):
        cache.put(f"{name}-{i}", Completion(text=name * 50))
        cache.put(f"shared-{i}", Completion(text=name))
        assert cache.get(f"{name}-{i}") is not None
    cache.close()
    """
)


def test_two_processes_write_at_once(tmp_path: Path) -> None:
    db = tmp_path / "cache.db"
    start = time.time() + 1.0
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), name, str(start)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with ResponseCache(db) as cache:
        assert cache.info().entries == 900
        shared = cache.get("shared-0")
        assert shared is not None
        assert shared.text in {"a", "b"}
