"""The ceiling: skilleval's batched work, scheduled as skilleval scheduled it, and nothing else.

    case.py ceiling SCHEDULE REPORT PARAMS

``SCHEDULE`` is what :func:`record_run` wrote during the skilleval run it is compared with
(``case.py skilleval ... --record``): every drain of the engine's batched decoder, with what
its feed answered at each question (which request a free slot took, or none; which prompts
were waiting), each decoder's KV cells, and each request's prompt tokens, sampling and the
tokens skilleval generated. The ceiling loads the same model with the run's threads and wait
policy (from its results.json environment block, passed in ``PARAMS``), makes the same
batched contexts (the engine's ``LlamaBackend``) and replays the drains through the engine's
own decoder (bench/ceiling_schedule.py): the same prompt chunk placed between the same decode
steps, the same shared prefix evaluated once and copied, the same admissions, the same prefix
store (empty at the start, as in a fresh home), and samplers built as the engine builds them
(llama.cpp's greedy chain; a schema-held reply with its grammar, the short way, with the
judge's loop guard). Each sequence ends after exactly the tokens skilleval generated for it:
no chat bookkeeping, stop strings, detokenizing, queueing or grading. It is timed as
skilleval's ``generation_tokens_per_s`` is: tokens generated ÷ seconds inside the decoder.

After the clock stops, each reply's tokens are compared with skilleval's, and the tokens
evaluated with skilleval's count; the report says how many agree.

Also :func:`read_bandwidth`, the machine's memory read bandwidth, for the bound every
decode step is held to: each step reads every weight once; and :func:`apply_wait_policy`,
shared with the all-at-once ceiling (bench/ceiling_prefill.py).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WAIT_VARIABLE = "OMP_WAIT_POLICY"
PLACEMENTS = (
    ("chunk_a_step", False),
    ("whole_prompts", True),
    ("whole_prompts", True),
    ("chunk_a_step", False),
)
"""The all-waiting runs: prompts a chunk a step (the engine's way), or each whole."""
MODEL_CELLS = 512
"""KV cells of the model's own context, which only tokenizes when batching (as the engine's)."""


def read_bandwidth(size_mb: int = 512, repeat: int = 5) -> float:
    """Bytes a second this process reads from memory: the best of ``repeat`` sums over an
    array far larger than the caches."""
    import numpy as np

    data = np.ones(size_mb * 1024 * 1024 // 8, dtype=np.float64)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        data.sum()
        best = min(best, time.perf_counter() - start)
    return data.nbytes / best


def apply_wait_policy(recorded: dict[str, Any] | None) -> dict[str, str]:
    """Make llama.cpp's threads wait as the compared run's did (its results.json
    ``environment.wait_policy``); call before llama.cpp's library loads. Not chosen afresh:
    the machine's state now is not the run's."""
    policy = (recorded or {}).get("policy")
    if policy in ("ACTIVE", "PASSIVE"):
        os.environ[WAIT_VARIABLE] = policy
    elif policy == "default":
        os.environ.pop(WAIT_VARIABLE, None)
    else:
        raise SystemExit(
            f"the run recorded no wait policy the ceiling can set ({recorded!r}); "
            "results.json's environment.wait_policy.policy must be ACTIVE, PASSIVE or default"
        )
    return {"policy": policy, "reason": "the compared run's (its results.json environment)"}


def record_run() -> Callable[[Path], None]:
    """Record the schedule of every batched drain in this skilleval process (installed before
    the run starts); returns what writes it to a file once the run is over."""
    from ceiling_schedule import Recorder, install

    from skilleval.engine import llama_batched
    from skilleval.engine.greedy_grammar import guards_loops

    requests: dict[int, dict[str, Any]] = {}
    original: Callable[..., Any] = llama_batched.BatchedLlama.prepare

    def prepare(self: Any, request: Any) -> Any:
        prepared = original(self, request)
        requests[id(prepared.job)] = {
            "purpose": request.purpose,
            "json_schema": request.json_schema,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "seed": request.seed,
            "loop_guard": guards_loops(request),
        }
        return prepared

    def cells(decoder: Any) -> int:
        import llama_cpp

        return int(llama_cpp.llama_n_ctx(decoder.backend.ctx)) // (decoder.width + 1)

    llama_batched.BatchedLlama.prepare = prepare  # type: ignore[method-assign]
    recorder = Recorder(describe=lambda job: requests.get(id(job), {}), cells=cells)
    install(recorder, lambda decoder, token: bool(decoder.backend.is_eog(token)))

    def write(path: Path) -> None:
        path.write_text(json.dumps(recorder.to_json()), encoding="utf-8")

    return write


def run_ceiling(schedule_path: Path, report: Path, params: dict[str, Any]) -> int:
    """Replay ``schedule_path`` (see the module's docstring); write the JSON report."""
    policy = apply_wait_policy(params.get("wait_policy"))
    from ceiling_schedule import (
        CeilingDecoder,
        Diverged,
        Plan,
        lanes_of,
        replay,
        replay_all_waiting,
    )
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar

    from skilleval.engine.batch_llama import LlamaBackend
    from skilleval.engine.greedy_grammar import closing_token
    from skilleval.engine.llama_checks import native_seed
    from skilleval.engine.prefix_store import PrefixStore

    schedule = json.loads(schedule_path.read_text(encoding="utf-8"))
    threads = int(params["n_threads"])
    load_start = time.perf_counter()
    # As the engine opens it (engine/llama_single.py open_model), with the run's threads.
    n_batch = max(2, int(params["n_batch"]))
    llm = Llama(
        model_path=params["path"],
        n_ctx=MODEL_CELLS,
        n_batch=n_batch,
        n_ubatch=n_batch,
        n_threads=threads,
        n_threads_batch=int(params.get("n_threads_batch") or threads),
        seed=0,
        logits_all=False,
        verbose=False,
    )
    closing = closing_token(llm)
    grammars: dict[str, Any] = {}
    current = threading.local()  # the context of the decoder draining on this thread
    made: list[Any] = []  # every context, freed at the end
    setup_s = [time.perf_counter() - load_start]

    def make_sampler(job: dict[str, Any]) -> Callable[[], Any]:
        # As engine/llama_batched.py's prepare() builds a request's sampler.
        schema = job.get("json_schema")
        grammar = None
        if schema is not None:
            key = json.dumps(schema, sort_keys=True, default=dict)
            if key not in grammars:
                grammars[key] = LlamaGrammar.from_json_schema(
                    json.dumps(schema, default=dict), verbose=False
                )
            grammar = grammars[key]
        sampled = float(job.get("temperature") or 0.0) > 0

        def make() -> Any:
            return current.backend.sampler(
                temperature=float(job["temperature"]) if sampled else 0.0,
                top_p=float(job["top_p"]) if sampled else 1.0,
                seed=native_seed(int(job.get("seed") or 0)),
                grammar=grammar,
                closing=closing if job.get("loop_guard") else None,
            )

        return make

    store: list[Path] = []  # each run starts from an empty prefix store, as a fresh home does

    def make_decoder(spec: dict[str, Any], plans: dict[int, Plan]) -> CeilingDecoder:
        # A new context, as the engine makes one when the work needs more KV cells (a lane's
        # with the lane's threads).
        start = time.perf_counter()
        backend = LlamaBackend(
            llm, spec["width"], spec["cells"], spec["n_batch"], spec.get("threads")
        )
        made.append(backend)
        current.backend = backend
        setup_s[0] += time.perf_counter() - start
        return CeilingDecoder(
            backend,
            spec["width"],
            spec["n_ctx"],
            spec["n_batch"],
            PrefixStore(store[-1]) if spec["store"] else None,
            plans=plans,
        )

    jobs = schedule["jobs"]

    def entering(decoder: CeilingDecoder) -> None:
        current.backend = decoder.backend

    def identical(replies: list[list[Any] | None]) -> int:
        # A generation's tokens, or a choice's scores, exactly as skilleval's.
        return sum(
            mine is not None and mine == j.get("scores" if "options" in j else "tokens")
            for mine, j in zip(replies, jobs, strict=True)
        )

    store.append(Path(tempfile.mkdtemp(prefix="skilleval-ceiling-prefixes-")))
    try:
        done = replay(schedule, make_decoder, make_sampler, entering)
    except Diverged as exc:
        raise SystemExit(f"the ceiling did not follow skilleval's schedule: {exc}") from None
    lanes = len(lanes_of(schedule))
    threads_used = made[0].threads if made else threads
    load_s = setup_s[0]
    # The two placements of prompt work compared on the same work, every request waiting;
    # run in the order A B B A, so that a load drifting steadily weighs on both alike.
    all_waiting: dict[str, Any] = {}
    for name, whole in PLACEMENTS:
        store.append(Path(tempfile.mkdtemp(prefix="skilleval-ceiling-prefixes-")))
        run = replay_all_waiting(schedule, make_decoder, make_sampler, whole)
        seen = all_waiting.setdefault(name, {"runs": 0, "inference_s": 0.0, "generated": 0})
        seen["runs"] += 1
        seen["inference_s"] = round(seen["inference_s"] + run.busy_s, 6)
        seen["generated"] += run.generated
        seen["tokens_per_s"] = round(seen["generated"] / seen["inference_s"], 2)
        seen["tokens_evaluated"] = run.evaluated
        seen["decode_steps"] = run.steps
        seen["replies_identical"] = min(
            identical(run.replies), seen.get("replies_identical", len(jobs))
        )
    summary = {
        "load_s": round(load_s, 6),
        "inference_s": round(done.busy_s, 6),
        "model_calls": len(jobs),
        "drains": len(schedule["drains"]),
        "contexts": len(schedule["decoders"]),
        "width": max((d["width"] for d in schedule["decoders"]), default=0),
        "cells": [d["cells"] for d in schedule["decoders"]],
        "threads": threads_used,
        "lanes": lanes,
        "tokens_evaluated": done.evaluated,
        "tokens_evaluated_skilleval": sum(int(j.get("evaluated", 0)) for j in jobs),
        "completion_tokens": done.generated,
        "decode_steps": done.steps,
        "steps_with_a_prompt_chunk": done.filling_steps,
        "tokens_per_s": round(done.generated / done.busy_s, 2) if done.busy_s else None,
        "replies_identical": identical(done.replies),
        "wait_policy": policy,
        "all_waiting": all_waiting,
    }
    for backend in made:
        backend.close()
    for folder in store:
        shutil.rmtree(folder, ignore_errors=True)
    report.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return 0
