"""The ceiling's schedule: what skilleval's batched decoder was given, recorded, and given again.

The ceiling (bench/ceiling.py) must schedule exactly as the engine does, so it does not copy
the engine's scheduler: it runs it. :class:`CeilingDecoder` is the engine's own
``BatchDecoder`` (engine/batch.py: the chunk of a prompt placed between decode steps by
``plan_step``, the shared prefix of ``SharedPrefix`` in engine/batch_prefix.py, admission by
slot), with one method replaced: ``_step``, which in the engine detokenizes each token and
checks stop strings and the length budget. Here a sequence ends after exactly the tokens
skilleval generated for it (and, when skilleval's ended on end-of-generation, after sampling
that token too), with no text made.

What the decoder decides depends only on what its feed answered, when: which request a free
slot took (or none, when skilleval's queue was empty) and which prompts were waiting (they
choose the shared prefix). :func:`install` records those answers in a skilleval run, per
drain of a decoder, with the KV cells of each decoder's context; :class:`ReplayFeed` gives
the same answers in the same order to the ceiling's decoder. A decoder fed the same answers,
whose sequences end at the same tokens, asks the same questions in the same order, so the
replay follows skilleval's schedule call for call, and says so (:class:`Diverged`) if not.

Pure Python (no llama.cpp here), so the replay is tested on the engine's fake backend.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import skilleval.engine.batch as engine_batch
from skilleval.engine.batch import (
    BatchDecoder,
    BatchJob,
    BatchResult,
    Deliver,
    Feed,
    ListFeed,
    Token,
    prefill_chunks,
)

__all__ = [
    "CeilingDecoder",
    "Diverged",
    "Plan",
    "Recorder",
    "ReplayFeed",
    "install",
    "lanes_of",
    "plan_whole",
    "replay",
    "replay_all_waiting",
]


class Diverged(Exception):
    """The replayed decoder asked its feed something skilleval's decoder did not ask then."""


# -- recording, in a skilleval run ---------------------------------------------------------


@dataclass
class Recorder:
    """What skilleval's decoders were given and what they produced, as JSON-ready data.

    ``describe(job)`` adds what the ceiling needs to rebuild a job's sampler (its request's
    schema, temperature, seed, loop guard); ``cells(decoder)`` gives the KV cells per
    sequence of the decoder's context.
    """

    describe: Callable[[BatchJob], dict[str, Any]] = lambda job: {}
    cells: Callable[[BatchDecoder], int] = lambda decoder: 0
    prompts: list[list[int]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    drains: list[dict[str, Any]] = field(default_factory=list)
    decoders: list[dict[str, Any]] = field(default_factory=list)
    _prompt_index: dict[tuple[int, ...], int] = field(default_factory=dict)
    _job_index: dict[int, int] = field(default_factory=dict)
    _decoder_index: dict[int, int] = field(default_factory=dict)
    _alive: list[Any] = field(default_factory=list)  # keeps ids unique while recording

    def prompt(self, prompt: Sequence[int]) -> int:
        key = tuple(prompt)
        if key not in self._prompt_index:
            self._prompt_index[key] = len(self.prompts)
            self.prompts.append(list(key))
        return self._prompt_index[key]

    def job(self, job: BatchJob) -> int:
        if id(job) not in self._job_index:
            self._alive.append(job)
            self._job_index[id(job)] = len(self.jobs)
            entry = {"prompt": self.prompt(job.prompt), "max_tokens": job.max_tokens}
            if job.options:  # a choice: scored in the slot, nothing sampled
                entry["options"] = [list(o) for o in job.options]
            else:
                entry |= self.describe(job)
            self.jobs.append(entry)
        return self._job_index[id(job)]

    def decoder(self, decoder: BatchDecoder) -> int:
        if id(decoder) not in self._decoder_index:
            self._alive.append(decoder)
            self._decoder_index[id(decoder)] = len(self.decoders)
            self.decoders.append(
                {
                    "cells": self.cells(decoder),
                    "width": decoder.width,
                    "n_ctx": decoder.n_ctx,
                    "n_batch": decoder.n_batch,
                    "store": decoder.store is not None,
                    "threads": getattr(decoder.backend, "threads", None),
                }
            )
        return self._decoder_index[id(decoder)]

    def finished(self, job: BatchJob, tokens: Sequence[int], eog: bool, evaluated: int) -> None:
        entry = self.jobs[self.job(job)]
        entry.update(tokens=[int(t) for t in tokens], eog=eog, evaluated=evaluated)

    def scored(self, job: BatchJob, scores: Sequence[float], evaluated: int) -> None:
        entry = self.jobs[self.job(job)]
        entry.update(scores=[float(x) for x in scores], evaluated=evaluated)

    def to_json(self) -> dict[str, Any]:
        return {
            "prompts": self.prompts,
            "jobs": self.jobs,
            "decoders": self.decoders,
            "drains": self.drains,
            "scored": sum(1 for j in self.jobs if "options" in j),
        }


class RecordingFeed:
    """``feed`` as a decoder sees it, every answer written to ``events``: ``["t", job]``
    (``job`` None when none was waiting) and ``["w", [prompt, ...]]``."""

    def __init__(self, feed: Feed, recorder: Recorder, events: list[Any]) -> None:
        self._feed = feed
        self._recorder = recorder
        self._events = events

    def take(self) -> tuple[BatchJob, Deliver] | None:
        taken = self._feed.take()
        self._events.append(["t", None if taken is None else self._recorder.job(taken[0])])
        return taken

    def waiting(self) -> Sequence[tuple[int, ...]]:
        prompts = self._feed.waiting()
        self._events.append(["w", [self._recorder.prompt(p) for p in prompts]])
        return prompts


def install(recorder: Recorder, is_eog: Callable[[BatchDecoder, int], bool]) -> Callable[[], None]:
    """Record every drain of every ``BatchDecoder`` in this process into ``recorder``
    (wrapping the class's methods; the engine's code runs unchanged inside). Returns what
    takes the wrappers off again."""
    original_drain = BatchDecoder.drain
    original_step = BatchDecoder._step
    original_scored = BatchDecoder._scored

    def drain(self: BatchDecoder, feed: Feed) -> None:
        events: list[Any] = []
        entry = {"decoder": recorder.decoder(self), "events": events}
        recorder.drains.append(entry)
        entry["start"] = time.perf_counter()
        try:
            original_drain(self, RecordingFeed(feed, recorder, events))
        finally:
            entry["end"] = time.perf_counter()

    def step(self: BatchDecoder, live: Any, token: int, result: BatchResult) -> bool:
        going = original_step(self, live, token, result)
        if not going:
            recorder.finished(live.job, live.tokens, is_eog(self, token), result.evaluated)
        return going

    def scored(self: BatchDecoder, slot: int, live: Any, index: int) -> bool:
        going = original_scored(self, slot, live, index)
        if not going:
            recorder.scored(live.job, live.result.scores, live.result.evaluated)
        return going

    BatchDecoder.drain = drain  # type: ignore[method-assign]
    BatchDecoder._step = step  # type: ignore[method-assign]
    BatchDecoder._scored = scored  # type: ignore[method-assign]

    def uninstall() -> None:
        BatchDecoder.drain = original_drain  # type: ignore[method-assign]
        BatchDecoder._step = original_step  # type: ignore[method-assign]
        BatchDecoder._scored = original_scored  # type: ignore[method-assign]

    return uninstall


# -- replaying, in the ceiling -----------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How one request ends: after ``tokens`` generated tokens, and with ``eog`` after
    sampling one more (the end-of-generation token skilleval stopped at)."""

    tokens: int
    eog: bool


class CeilingDecoder(BatchDecoder):
    """The engine's decoder, ending each sequence by its :class:`Plan` instead of by its
    text: no detokenizing, no stop strings. ``replies`` holds each job's tokens."""

    def __init__(
        self, *args: Any, plans: dict[int, Plan], whole: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.plans = plans
        """By ``id`` of a job."""
        self.whole = whole
        """Evaluate each prompt whole in the step it begins (:func:`plan_whole`) instead of
        one chunk a step, for the comparison with all-at-once prefill."""
        self.replies: dict[int, list[Any]] = {}
        """Each job's tokens, or a choice's scores."""
        self.evaluated = 0

    def drain(self, feed: Feed) -> None:
        if not self.whole:
            super().drain(feed)
            return
        # The engine's loop calls its module's plan_step; this decoder alone plans otherwise.
        original = engine_batch.plan_step
        engine_batch.plan_step = plan_whole  # type: ignore[assignment]
        try:
            super().drain(feed)
        finally:
            engine_batch.plan_step = original

    def _scored(self, slot: int, live: Any, index: int) -> bool:
        going = super()._scored(slot, live, index)
        if not going:
            self.replies[id(live.job)] = live.result.scores
            self.evaluated += live.result.evaluated
        return going

    def _step(self, live: Any, token: int, result: BatchResult) -> bool:
        plan = self.plans[id(live.job)]
        if len(live.tokens) < plan.tokens:
            live.tokens.append(token)
            self.generated += 1
            if len(live.tokens) < plan.tokens or plan.eog:
                live.pending = token
                return True
        result.completion_tokens = len(live.tokens)
        result.latency_ms = (time.perf_counter() - live.started) * 1000.0
        self.replies[id(live.job)] = live.tokens
        self.evaluated += result.evaluated
        return False


def plan_whole(live: Sequence[tuple[int, Any]], n_batch: int) -> tuple[list[Any], list[Any]]:
    """``plan_step`` (engine/batch.py) as it was before prompts were spread over decode steps:
    every prompt still filling is evaluated whole in this step, in batches of its own cut as
    ``prefill_chunks`` cuts them, before the batch of the sequences already generating."""
    items: list[Token] = []
    rows: list[tuple[int, Any, int]] = []
    for slot, s in live:
        if s.fill >= len(s.job.prompt):
            rows.append((slot, s, len(items)))
            items.append(s.entry(slot))
    batches: list[Any] = []
    chunks: list[tuple[int, Any, int]] = []
    for slot, s in live:
        prompt = s.job.prompt
        if s.fill >= len(prompt):
            continue
        for a, b in prefill_chunks(s.fill, len(prompt), n_batch):
            batch = [(prompt[p], p, slot, p == len(prompt) - 1) for p in range(a, b)]
            batches.append((batch, [(slot, s, len(batch) - 1)] if b == len(prompt) else []))
        chunks.append((slot, s, len(prompt)))
    return [*batches, (items, rows)], chunks


class ReplayFeed:
    """The answers one drain of skilleval's decoder got, given again in the same order."""

    def __init__(
        self,
        events: Sequence[Any],
        jobs: Sequence[BatchJob],
        prompts: Sequence[tuple[int, ...]],
    ) -> None:
        self._events = events
        self._jobs = jobs
        self._prompts = prompts
        self.at = 0

    def _next(self, kind: str) -> Any:
        if self.at >= len(self._events):
            raise Diverged(f"asked {kind!r} after the {len(self._events)} recorded answers")
        got, value = self._events[self.at]
        if got != kind:
            raise Diverged(f"answer {self.at}: asked {kind!r}, skilleval's decoder asked {got!r}")
        self.at += 1
        return value

    def take(self) -> tuple[BatchJob, Deliver] | None:
        index = self._next("t")
        return None if index is None else (self._jobs[index], _ignore)

    def waiting(self) -> Sequence[tuple[int, ...]]:
        return [self._prompts[i] for i in self._next("w")]

    def done(self) -> None:
        if self.at != len(self._events):
            raise Diverged(f"{len(self._events) - self.at} recorded answers were never asked for")


def _ignore(result: BatchResult) -> None:
    """A result needs no delivering: the decoder keeps the tokens."""


@dataclass
class Replayed:
    """What a replay did: seconds inside the decoders, tokens generated and evaluated, decode
    steps (and those that carried a prompt chunk), and each recorded job's tokens (None for a
    job no drain finished)."""

    busy_s: float
    generated: int
    evaluated: int
    steps: int
    filling_steps: int
    replies: list[list[Any] | None]


def _jobs(
    schedule: dict[str, Any], make_sampler: Callable[[dict[str, Any]], Callable[[], Any]]
) -> tuple[list[tuple[int, ...]], list[BatchJob], dict[int, Plan]]:
    prompts = [tuple(p) for p in schedule["prompts"]]
    jobs = [
        BatchJob.choice(prompts[j["prompt"]], tuple(tuple(o) for o in j["options"]))
        if "options" in j
        else BatchJob(prompts[j["prompt"]], int(j["max_tokens"]), make_sampler(j))
        for j in schedule["jobs"]
    ]
    plans = {
        id(job): Plan(len(j.get("tokens", ())), bool(j.get("eog")))
        for job, j in zip(jobs, schedule["jobs"], strict=True)
    }
    return prompts, jobs, plans


def _replayed(made: Sequence[CeilingDecoder], jobs: Sequence[BatchJob]) -> Replayed:
    replies: dict[int, list[Any]] = {}
    for decoder in made:
        replies.update(decoder.replies)
    return Replayed(
        busy_s=sum(d.busy_s for d in made),
        generated=sum(d.generated for d in made),
        evaluated=sum(d.evaluated for d in made),
        steps=sum(d.steps for d in made),
        filling_steps=sum(d.filling_steps for d in made),
        replies=[replies.get(id(job)) for job in jobs],
    )


def lanes_of(schedule: dict[str, Any]) -> list[list[int]]:
    """The recorded drains (indices) grouped by the lane that ran them: drains that overlapped
    in time ran in different lanes (engine/llama_lanes.py), and a decoder stays in the lane of
    its first drain (a lane's context made again, larger, is a new decoder in the same lane,
    found free when it starts). One group when nothing overlapped, or times were not kept."""
    drains = schedule["drains"]
    if not all("start" in d and "end" in d for d in drains):
        return [list(range(len(drains)))]
    lanes: list[list[int]] = []
    ends: list[float] = []
    lane_of: dict[int, int] = {}
    for i in sorted(range(len(drains)), key=lambda i: drains[i]["start"]):
        k, start = drains[i]["decoder"], drains[i]["start"]
        if k not in lane_of:
            free = [n for n, end in enumerate(ends) if end <= start]
            lane_of[k] = min(free, key=lambda n: ends[n]) if free else len(lanes)
            if lane_of[k] == len(lanes):
                lanes.append([])
                ends.append(0.0)
        lanes[lane_of[k]].append(i)
        ends[lane_of[k]] = max(ends[lane_of[k]], drains[i]["end"])
    return lanes


def replay(
    schedule: dict[str, Any],
    make_decoder: Callable[[dict[str, Any], dict[int, Plan]], CeilingDecoder],
    make_sampler: Callable[[dict[str, Any]], Callable[[], Any]],
    entering: Callable[[CeilingDecoder], None] = lambda decoder: None,
) -> Replayed:
    """Run every recorded drain again, in order, on decoders made by ``make_decoder`` (one per
    recorded decoder, made when its first drain comes, as skilleval made them); the drains of
    each lane (:func:`lanes_of`) on a thread of its own, the lanes at the same time, as
    skilleval ran them. ``entering(decoder)`` is called on the drain's thread before each
    drain (the ceiling points its samplers at that decoder's context).

    ``make_sampler(job)`` gives a job's sampler factory. Raises :class:`Diverged` when a
    decoder does not ask what skilleval's asked. ``busy_s`` is the seconds inside the
    decoders with one lane, and from the first drain's start to the last one's end with
    several.
    """
    prompts, jobs, plans = _jobs(schedule, make_sampler)
    decoders: dict[int, CeilingDecoder] = {}
    making = threading.Lock()
    failed: list[BaseException] = []

    def run(drains: Sequence[int]) -> None:
        try:
            for i in drains:
                drain = schedule["drains"][i]
                k = drain["decoder"]
                with making:
                    if k not in decoders:
                        decoders[k] = make_decoder(schedule["decoders"][k], plans)
                    decoder = decoders[k]
                entering(decoder)
                feed = ReplayFeed(drain["events"], jobs, prompts)
                decoder.drain(feed)
                feed.done()
        except BaseException as exc:  # raised on the caller's thread below
            failed.append(exc)

    lanes = lanes_of(schedule)
    start = time.perf_counter()
    workers = [threading.Thread(target=run, args=(lane,)) for lane in lanes[1:]]
    for worker in workers:
        worker.start()
    run(lanes[0] if lanes else [])
    for worker in workers:
        worker.join()
    wall = time.perf_counter() - start
    if failed:
        raise failed[0]
    done = _replayed(list(decoders.values()), jobs)
    if len(lanes) > 1:
        done.busy_s = wall
    return done


def replay_all_waiting(
    schedule: dict[str, Any],
    make_decoder: Callable[[dict[str, Any], dict[int, Plan]], CeilingDecoder],
    make_sampler: Callable[[dict[str, Any]], Callable[[], Any]],
    whole: bool,
) -> Replayed:
    """The recorded requests in skilleval's admission order, all waiting from the start (no
    slot ever idle for want of one), drained once by one decoder with the largest context
    skilleval made; with ``whole``, each prompt evaluated whole as it begins. Run both ways,
    this compares the two placements of prompt work on the same work, which the recorded
    schedule cannot (its admissions fall at other steps once prompts move)."""
    _, jobs, plans = _jobs(schedule, make_sampler)
    order = [
        value
        for drain in schedule["drains"]
        for kind, value in drain.get("events", ())
        if kind == "t" and value is not None
    ]
    spec = max(schedule["decoders"], key=lambda d: d["cells"])
    # One decoder for the work of every lane: their widths together, the run's threads.
    spec = {**spec, "width": spec["width"] * len(lanes_of(schedule)), "threads": None}
    decoder = make_decoder(spec, plans)
    decoder.whole = whole
    decoder.drain(ListFeed([jobs[i] for i in order]))
    return _replayed([decoder], jobs)
