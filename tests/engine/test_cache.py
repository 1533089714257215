"""The response cache and the caching provider, with a fake model (no GGUF needed)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import fakes
import pytest

from skilleval.engine.base import Completion, Message, ModelIdentity, Provider, Request
from skilleval.engine.cache import CachingProvider, ResponseCache, cache_key
from skilleval.errors import CacheError, ProviderError

ROOT = Path(__file__).resolve().parents[2]
IDENTITY = ModelIdentity(kind="gguf", name="fake.gguf", sha256="ab" * 32, size=1)


class FakeProvider(fakes.FakeProvider):
    """Answers ``reply <trial>``; can be told to fail or truncate."""

    def __init__(self, *, fail: bool = False, truncate: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.truncate = truncate

    @property
    def calls(self) -> int:
        return len(self.requests)

    def identity(self) -> ModelIdentity:
        return IDENTITY

    def reply(self, request: Request) -> Completion:
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


def test_not_a_database_is_unusable(tmp_path: Path) -> None:
    bad = tmp_path / "cache.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CacheError, match=r"is unusable .*; delete it to start afresh") as caught:
        ResponseCache(bad)
    assert caught.value.damaged


def _filled(path: Path, entries: int = 60) -> None:
    with ResponseCache(path) as store:
        for i in range(entries):
            store.put(f"k{i}", Completion(text=f"reply {i} " + "é" * (i * 7), latency_ms=1.0))
        # Fold the WAL into the file, so the flips below land in real pages.
        store._run("PRAGMA wal_checkpoint(TRUNCATE)")


def _use(path: Path) -> str:
    """Open, read every key, write one and count: 'ok' or the CacheError's message."""
    try:
        with ResponseCache(path) as store:
            for i in range(60):
                store.get(f"k{i}")
            store.put("new", Completion(text="new"))
            store.info()
    except CacheError as exc:
        return str(exc)
    return "ok"


@pytest.mark.parametrize("seed", range(24))
def test_flipped_bytes_inside_pages_give_the_unusable_message(tmp_path: Path, seed: int) -> None:
    """Damage anywhere past the header is either harmless or reported as whole-file damage is."""
    db = tmp_path / "cache.db"
    _filled(db)
    data = bytearray(db.read_bytes())
    rng = random.Random(seed)
    for _ in range(rng.choice((1, 4, 32))):
        at = rng.randrange(100, len(data))
        data[at] ^= 1 << rng.randrange(8)
    db.write_bytes(bytes(data))
    outcome = _use(db)  # never sqlite3.Error, UnicodeDecodeError or any other traceback
    assert outcome == "ok" or "is unusable" in outcome or "cannot be written" in outcome


def test_a_damaged_body_is_a_miss(tmp_path: Path) -> None:
    db = tmp_path / "cache.db"
    with ResponseCache(db) as store:
        store._run("INSERT INTO responses VALUES ('bad', '', CAST(x'80ff' AS TEXT), 0)")
        assert store.get("bad") is None


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make ``path`` refuse writes, even to root (who ignores file modes): chattr +i."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(0o644)
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("cannot make a file read-only here (root, and no chattr +i)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_read_only_cache_cannot_be_written(tmp_path: Path) -> None:
    db = tmp_path / "cache.db"
    _filled(db, 2)
    with read_only(db), pytest.raises(CacheError, match="cannot be written") as caught:
        ResponseCache(db)
    assert not caught.value.damaged


def test_a_cache_that_fails_mid_run_is_set_aside_with_one_warning(cache: ResponseCache) -> None:
    warnings: list[str] = []
    fake = FakeProvider()
    provider = CachingProvider(fake, cache, warn=warnings.append)

    def full(*args: object, **kw: object) -> bool:
        raise CacheError(
            "the response cache x cannot be written (database or disk is full)", damaged=False
        )

    cache.put = full  # type: ignore[method-assign]
    first = provider.complete(_request())
    second = provider.complete(_request())
    assert (first.text, second.text) == ("reply 0", "reply 0")
    assert fake.calls == 2
    assert provider.cache is None
    assert warnings == [
        "the response cache x cannot be written (database or disk is full); "
        "the run goes on without the cache"
    ]


class SurrogateProvider(FakeProvider):
    def complete(self, request: Request) -> Completion:
        return Completion(text="bad \ud800 and \udfff end", choice_scores={"\udc80": -1.0})


def test_lone_surrogates_from_any_provider_are_replaced_and_counted(cache: ResponseCache) -> None:
    provider = CachingProvider(SurrogateProvider(), cache)
    reply = provider.complete(_request(messages=(Message("user", "prompt \ud800"),)))
    assert reply.text == "bad \ufffd and \ufffd end"
    assert reply.replaced == 2
    assert reply.to_json()["replaced_chars"] == 2
    assert reply.choice_scores == {"\ufffd": -1.0}
    hit = provider.complete(_request(messages=(Message("user", "prompt \ud800"),)))
    assert (hit.cached, hit.text, hit.replaced) == (True, reply.text, 2)
    assert "replaced_chars" not in Completion(text="clean").to_json()


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


def test_a_scripted_lone_surrogate_runs_caches_and_is_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reply crosses the cache and results.jsonl as U+FFFD, with the count beside it."""
    from skilleval.cli import run_cli

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "version: 1\n"
        'model:\n  provider: scripted\n  default: "tide \\ud800 pool"\n'
        "tests:\n  - id: one\n    prompt: hi\n    assert: [{type: contains, value: tide}]\n",
        encoding="utf-8",
    )
    for cached in (False, True):
        assert run_cli(["run", str(suite), "--json"]) == 0
        record = json.loads(capsys.readouterr().out)["records"][0]
        assert record["output"] == "tide \ufffd pool"
        assert (record["stats"]["cached"], record["stats"]["replaced_chars"]) == (cached, 1)
    latest = Path(os.environ["SKILLEVAL_HOME"]) / "runs" / "latest" / "results.jsonl"
    assert json.loads(latest.read_text(encoding="utf-8"))["stats"]["replaced_chars"] == 1


def test_a_read_only_cache_runs_uncached_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from skilleval.cli import run_cli

    db = Path(os.environ["SKILLEVAL_HOME"]) / "cache.db"
    _filled(db, 2)
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "version: 1\nmodel: echo\ntests:\n"
        + "".join(
            f"  - id: t{i}\n    prompt: hi {i}\n    assert: [{{type: contains, value: hi}}]\n"
            for i in range(3)
        ),
        encoding="utf-8",
    )
    with read_only(db):
        assert run_cli(["run", str(suite), "--json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert [r["status"] for r in doc["records"]] == ["pass"] * 3
    assert doc["calls"]["model_calls"] == 3
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: the response cache {db} cannot be written (attempt to write a readonly "
        "database); the run goes on without the cache"
    ]


def test_a_lone_surrogate_in_the_suite_itself_reaches_every_output_as_ufffd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from skilleval.cli import run_cli

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        'version: 1\nmodel: echo\ntests:\n  - id: one\n    prompt: "hi \\udc00"\n'
        "    assert: [{type: contains, value: hi}]\n",
        encoding="utf-8",
    )
    outputs = [tmp_path / f"out{suffix}" for suffix in (".html", ".json", ".md", ".csv")]
    args = [x for out in outputs for x in ("-o", str(out))]
    assert run_cli(["run", str(suite), "--json", *args]) == 0
    assert json.loads(capsys.readouterr().out)["records"][0]["prompt"] == "hi \ufffd"
    for out in outputs:
        text = out.read_text(encoding="utf-8")
        assert out.suffix == ".md" or "\ufffd" in text, out  # the summary shows no prompts


class BatchingFake(FakeProvider):
    """Decodes several requests at once; remembers each batch it was handed."""

    batch_width = 3

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[int]] = []

    def complete_batch(self, requests: list[Request]) -> list[Completion | ProviderError]:
        self.batches.append([r.trial for r in requests])
        out: list[Completion | ProviderError] = []
        for r in requests:
            out.append(ProviderError("no") if r.trial == 99 else self.complete(r))
        return out


def test_a_batch_sends_only_the_misses_in_order_and_stores_their_replies(
    cache: ResponseCache,
) -> None:
    inner = BatchingFake()
    provider = CachingProvider(inner, cache)
    assert provider.batch_width == 3
    provider.complete(_request(trial=1))
    answers = provider.complete_batch([_request(trial=t) for t in (0, 1, 2, 99)])
    assert inner.batches == [[0, 2, 99]]
    assert [a.text for a in answers[:3] if isinstance(a, Completion)] == [
        "reply 0",
        "reply 1",
        "reply 2",
    ]
    assert answers[1].cached is True  # type: ignore[union-attr]
    assert isinstance(answers[3], ProviderError)
    assert (provider.calls, provider.hits) == (4, 1)
    again = provider.complete_batch([_request(trial=t) for t in (0, 2)])
    assert all(isinstance(a, Completion) and a.cached for a in again)
    assert len(inner.batches) == 1


def test_a_provider_without_batches_is_asked_one_request_at_a_time(cache: ResponseCache) -> None:
    inner = FakeProvider()
    provider = CachingProvider(inner, cache)
    assert provider.batch_width == 1
    answers = provider.complete_batch([_request(trial=t) for t in range(3)])
    assert [a.text for a in answers if isinstance(a, Completion)] == [
        f"reply {t}" for t in range(3)
    ]
    assert inner.calls == 3


def test_busy_time_counts_overlapping_calls_once(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([10.0, 13.0, 20.0, 21.0])
    monkeypatch.setattr("skilleval.engine.cache.time.perf_counter", lambda: next(clock))
    provider = CachingProvider(FakeProvider(), None)
    provider._enter()  # 10.0: busy from here
    provider._enter()  # a second call in flight: no new interval
    provider._leave()
    provider._leave()  # 13.0
    provider._enter()  # 20.0
    provider._leave()  # 21.0
    assert provider.engine_busy()[1] == 4.0


class GatedFake(FakeProvider):
    """Holds every call until the test opens the gate, so calls overlap for certain."""

    max_concurrency = 4

    def __init__(self, *, fail: bool = False) -> None:
        super().__init__(fail=fail)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def reply(self, request: Request) -> Completion:
        self.entered.set()
        assert self.gate.wait(10)
        return super().reply(request)


@pytest.mark.parametrize("fail", [False, True])
def test_identical_requests_at_once_reach_the_model_once(cache: ResponseCache, fail: bool) -> None:
    inner = GatedFake(fail=fail)
    provider = CachingProvider(inner, cache)

    def ask() -> object:
        try:
            return provider.complete(_request())
        except ProviderError as exc:
            return exc

    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(ask)
        assert inner.entered.wait(10)
        twins = [pool.submit(ask) for _ in range(2)]
        time.sleep(0.05)  # the twins are waiting on the first call now
        inner.gate.set()
        answers = [first.result(10), *(t.result(10) for t in twins)]
    assert inner.calls == 1
    if fail:
        assert all(isinstance(a, ProviderError) for a in answers)
        assert provider.hits == 0
    else:
        assert [a.text for a in answers] == ["reply 0"] * 3  # type: ignore[union-attr]
        assert [a.cached for a in answers] == [False, True, True]  # type: ignore[union-attr]
        assert (provider.calls, provider.hits) == (1, 2)
    # Nothing stays in the air: the next identical request is a plain hit, or a new call.
    assert provider._flights == {}


def test_identical_requests_in_one_batch_are_sent_once(cache: ResponseCache) -> None:
    inner = BatchingFake()
    provider = CachingProvider(inner, cache)
    answers = provider.complete_batch([_request(trial=t) for t in (0, 1, 0, 0)])
    assert inner.batches == [[0, 1]]
    assert [a.text for a in answers if isinstance(a, Completion)] == [
        "reply 0",
        "reply 1",
        "reply 0",
        "reply 0",
    ]
    assert [a.cached for a in answers if isinstance(a, Completion)] == [
        False,
        False,
        True,
        True,
    ]
    assert (provider.calls, provider.hits) == (2, 2)


def test_without_a_cache_every_request_reaches_the_model() -> None:
    inner = FakeProvider()
    provider = CachingProvider(inner, None)
    provider.complete_batch([_request(), _request()])
    provider.complete(_request())
    assert inner.calls == 3
