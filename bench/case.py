"""One benchmark case, run as a child process so its wall time and peak RSS are its own.

    case.py skilleval SUITE REPORT [--record] [--profile PSTATS] [-- RUN_ARGS...]
        ``skilleval run SUITE -q`` in this process (SKILLEVAL_HOME comes from the parent),
        with every model call logged: purpose, token counts, time, and with --record the
        exact request and reply, so the limit case can replay them, and the batched
        decoder's schedule (REPORT with .schedule.json), so the ceiling can replay it.
    case.py limit REQUESTS REPORT PARAMS [recorded]
        The least token work those requests need, timed with llama-cpp-python alone; with
        ``recorded``, the same replay in the order skilleval made the calls.
    case.py ceiling SCHEDULE REPORT PARAMS
        The ceiling: the recorded schedule replayed through the engine's own batched decoder
        with the same model, threads, wait policy and sampling, and nothing else
        (bench/ceiling.py).
    case.py ceiling-prefill REQUESTS REPORT PARAMS WIDTH
        The all-at-once ceiling: the same requests through llama.cpp's low-level decode loop,
        each prompt evaluated whole at admission (bench/ceiling_prefill.py).

Each mode writes one JSON report; the parent reads it after the process exits.
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import json  # noqa: E402  (the start time is taken before anything is imported)
import sys  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402


def _request_json(request: Any) -> dict[str, Any]:
    return {
        "messages": [m.to_json() for m in request.messages],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "seed": request.seed,
        "json_schema": request.json_schema,
        "choices": list(request.choices) if request.choices is not None else None,
        "purpose": request.purpose,
    }


def _install_recorder(calls: list[dict[str, Any]], record: bool, model: dict[str, Any]) -> None:
    """Log every call that reaches a real model; cache hits never get this far."""
    from skilleval.engine import llama, openai

    def wrap(cls: Any) -> None:
        original: Callable[..., Any] = cls.complete

        def complete(self: Any, request: Any) -> Any:
            start = time.perf_counter()
            try:
                out = original(self, request)
            except Exception as exc:
                failed: dict[str, Any] = {
                    "purpose": request.purpose,
                    "error": str(exc),
                    "s": _since(start),
                }
                if record:
                    failed |= {"request": _request_json(request), "text": None}
                calls.append(failed)
                raise
            batched = getattr(self, "batch_width", 1) > 1
            entry: dict[str, Any] = {
                "purpose": request.purpose,
                # A batched call's own time, from its admission, not its wait for a slot.
                "s": round(out.latency_ms / 1000.0, 6) if batched else _since(start),
                "end": _since(STARTED),
                "prompt_tokens": out.prompt_tokens,
                "completion_tokens": out.completion_tokens,
                "tokens_evaluated": out.tokens_evaluated,
                "finish_reason": out.finish_reason,
            }
            if record:
                entry["request"] = _request_json(request)
                entry["text"] = out.text
            calls.append(entry)
            return out

        cls.complete = complete

    wrap(llama.LlamaProvider)
    wrap(openai.OpenAIProvider)

    # A list of requests (trigger routing) is answered at once by a batching model, each
    # logged with its own latency; without batching, complete_batch calls complete, which
    # logs them.
    original_batch: Callable[..., Any] = llama.LlamaProvider.complete_batch

    def complete_batch(self: Any, requests: Any) -> Any:
        answers = original_batch(self, requests)
        if getattr(self, "batch_width", 1) <= 1:
            return answers
        for request, out in zip(requests, answers, strict=True):
            if isinstance(out, Exception):
                calls.append({"purpose": request.purpose, "error": str(out), "s": 0.0})
                continue
            entry: dict[str, Any] = {
                "purpose": request.purpose,
                "s": round(out.latency_ms / 1000.0, 6),
                "end": _since(STARTED),
                "prompt_tokens": out.prompt_tokens,
                "completion_tokens": out.completion_tokens,
                "tokens_evaluated": out.tokens_evaluated,
                "finish_reason": out.finish_reason,
                "batched": True,
            }
            if record:
                entry["request"] = _request_json(request)
                entry["text"] = out.text
            calls.append(entry)
        return answers

    llama.LlamaProvider.complete_batch = complete_batch  # type: ignore[method-assign]

    original_load: Callable[..., Any] = llama.LlamaProvider._load

    def load(self: Any) -> Any:
        fresh = self._llm is None
        start = time.perf_counter()
        llm = original_load(self)
        if fresh:
            model.update(
                load_s=_since(start),
                path=str(self.path),
                n_ctx=int(llm.context_params.n_ctx),
                n_batch=int(llm.context_params.n_batch),
                n_threads=int(llm.context_params.n_threads),
                n_threads_batch=int(llm.context_params.n_threads_batch),
                batch_width=int(self.batch_width),
            )
        return llm

    llama.LlamaProvider._load = load  # type: ignore[method-assign]


def _since(start: float) -> float:
    return round(time.perf_counter() - start, 6)


def _busy(calls: list[dict[str, Any]]) -> float:
    """Seconds in which at least one model call was running.

    Batched calls overlap, so the sum of their latencies overstates the model's time (under
    width 4 it exceeded the run's wall time); the union of their intervals does not.
    """
    spans = sorted((c["end"] - c["s"], c["end"]) for c in calls if "end" in c)
    total, reach = 0.0, float("-inf")
    for start, end in spans:
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total + sum(c["s"] for c in calls if "end" not in c)


def run_skilleval(suite: Path, report: Path, record: bool, profile: Path | None) -> int:
    import os

    calls: list[dict[str, Any]] = []
    model: dict[str, Any] = {}
    from skilleval.cli import run_cli

    imported = time.perf_counter()
    _install_recorder(calls, record, model)
    if record:
        from ceiling import record_run

        write_schedule = record_run()
    # A judge's fitness is measured once per judge identity and remembered (the embedded
    # model's ships measured); the HTTP judge would measure it here, in (b) alone, so no case
    # measures it and every case does the same work.
    argv = ["run", str(suite), "-q", "--no-judge-check"]
    start = time.perf_counter()
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        code = profiler.runcall(run_cli, argv)
        profiler.dump_stats(profile)
    else:
        code = run_cli(argv)
    ran = time.perf_counter() - start
    home = Path(os.environ["SKILLEVAL_HOME"])
    # The newest run directory; "latest" is a link to it, not a run of its own.
    runs = [p for p in (home / "runs").glob("*/results.json") if not p.parent.is_symlink()]
    latest = max(runs, key=lambda p: p.stat().st_mtime)
    document = json.loads(latest.read_text(encoding="utf-8"))
    if record:
        write_schedule(report.with_suffix(".schedule.json"))
        with report.with_suffix(".requests.jsonl").open("w", encoding="utf-8") as fh:
            for call in calls:
                if "request" in call:
                    row = {
                        **call["request"],
                        "text": call["text"],
                        "s": call["s"],
                        "end": call.get("end"),
                        "completion_tokens": call.get("completion_tokens", 0),
                        "finish_reason": call.get("finish_reason"),
                        "tokens_evaluated": call.get("tokens_evaluated", 0),
                    }
                    fh.write(json.dumps(row) + "\n")
    summary = {
        "exit_code": code,
        "import_s": round(imported - STARTED, 6),
        "run_s": round(ran, 6),
        "inference_s": round(_busy(calls), 6),
        "model": model,
        "model_calls": len(calls),
        "calls_by_purpose": _count(c["purpose"] for c in calls),
        "errors": sum(1 for c in calls if "error" in c),
        "prompt_tokens": sum(c.get("prompt_tokens", 0) for c in calls),
        "tokens_evaluated": sum(c.get("tokens_evaluated", 0) for c in calls),
        "completion_tokens": sum(c.get("completion_tokens", 0) for c in calls),
        "document_calls": document.get("calls"),
        "document_environment": {
            k: document.get("environment", {}).get(k)
            for k in ("threads", "batch_width", "wait_policy", "lanes")
        },
        "document_duration_s": document.get("timing", {}).get("duration_s"),
        "run_dir": str(latest.parent),
    }
    report.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return 0 if code in (0, 1) else code


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def _score_options(
    llm: Any, prompt: list[int], choices: Sequence[str], eos: int
) -> tuple[str, int]:
    """The option with the highest total log-probability after ``prompt`` (its tokens, then
    ``eos``), the prompt's prefix reused from the KV state as ``Llama.generate`` reuses it;
    and how many option tokens were decoded."""
    import itertools

    import numpy as np

    held = [int(t) for t in llm.input_ids[: llm.n_tokens]]
    common = 0
    while common < min(len(held), len(prompt) - 1) and held[common] == prompt[common]:
        common += 1
    llm.n_tokens = common
    llm.eval(prompt[common:])

    from llama_cpp import llama_get_logits_ith

    n_vocab = int(llm.n_vocab())

    def logprobs() -> Any:
        # The last decoded token's logits (llama-cpp-python keeps none without logits_all).
        pointer = llama_get_logits_ith(llm.ctx, -1)
        row = np.ctypeslib.as_array(pointer, shape=(n_vocab,)).astype(np.float64)
        return row - (row.max() + np.log(np.exp(row - row.max()).sum()))

    first = logprobs()
    best, best_total, decoded = "", -float("inf"), 0
    for option in choices:
        sequence = [*(int(t) for t in llm.tokenize(option.encode("utf-8"), add_bos=False)), eos]
        total = float(first[sequence[0]])
        llm.n_tokens = len(prompt)
        for current, following in itertools.pairwise(sequence):
            llm.eval([current])
            decoded += 1
            total += float(logprobs()[following])
        if total > best_total:
            best, best_total = option, total
    llm.n_tokens = len(prompt)
    return best, decoded


def run_limit(requests: Path, report: Path, params: dict[str, Any], best: bool = True) -> int:
    """Replay the recorded requests through one ``Llama`` in the order that needs least work.

    Every request is rendered with the model's chat template and tokenized exactly as the
    in-process provider does, before the clock starts. Sorted by their token sequences,
    consecutive prompts share the longest possible prefix, so llama.cpp's own prefix reuse
    evaluates each distinct prefix once: the number of prompt tokens evaluated is the size
    of the token trie of all prompts (plus one token per prompt that is wholly a prefix of
    the one before, whose logits must be recomputed). Generation is greedy with the same
    max_tokens and the same JSON-schema grammar, through ``Llama.generate``, which is
    llama.cpp's decode and sampler with no completion bookkeeping around it.
    """
    from skilleval.engine.wait_policy import choose

    # Threads wait as skilleval's would here (chosen before llama.cpp's library loads).
    choose()
    from llama_cpp import Llama, llama_model_get_vocab, llama_token_is_eog
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from llama_cpp.llama_grammar import LlamaGrammar

    rows = [json.loads(line) for line in requests.read_text(encoding="utf-8").splitlines()]
    imported = time.perf_counter()

    load_start = time.perf_counter()
    llm = Llama(
        model_path=params["path"],
        n_ctx=params["n_ctx"],
        n_batch=params["n_batch"],
        n_threads=params["n_threads"],
        n_threads_batch=params["n_threads_batch"],
        seed=0,
        logits_all=False,
        verbose=False,
    )
    load_s = time.perf_counter() - load_start

    prep_start = time.perf_counter()
    eos, bos = int(llm.token_eos()), int(llm.token_bos())
    template = llm.metadata.get("tokenizer.chat_template")
    assert template, "the embedded model carries its chat template"
    formatter = Jinja2ChatFormatter(
        template=template,
        eos_token=llm.detokenize([eos], special=True).decode("utf-8", "replace"),
        bos_token=llm.detokenize([bos], special=True).decode("utf-8", "replace")
        if bos >= 0
        else "",
        stop_token_ids=[eos],
    )
    grammars: dict[str, Any] = {}
    work: list[tuple[list[int], dict[str, Any], Any]] = []
    for row in rows:
        rendered = formatter(messages=row["messages"])
        tokens = llm.tokenize(
            rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
        )
        grammar = None
        if row["json_schema"] is not None:
            key = json.dumps(row["json_schema"], sort_keys=True)
            if key not in grammars:
                grammars[key] = LlamaGrammar.from_json_schema(
                    json.dumps(row["json_schema"]), verbose=False
                )
            grammar = grammars[key]
        work.append(([int(t) for t in tokens], row, grammar))
    if best:
        work.sort(key=lambda w: w[0])
    prep_s = time.perf_counter() - prep_start

    evaluated: list[int] = []
    original_eval = llm.eval

    def counting_eval(tokens: Sequence[int]) -> None:
        evaluated.append(len(tokens))
        original_eval(tokens)

    llm.eval = counting_eval  # type: ignore[method-assign]
    vocab = llama_model_get_vocab(llm.model)
    prompt_evaluated = 0
    generated = 0
    same = 0
    option_tokens = 0
    start = time.perf_counter()
    for tokens, row, grammar in work:
        evaluated.clear()
        if row["choices"]:
            # A choice (a scored judge verdict, a routing request), as the engine scores one
            # at a time: the prompt once, then each option's tokens and the end of the turn,
            # one token a decode, summing the log-probabilities.
            picked, decoded = _score_options(llm, tokens, row["choices"], eos)
            option_tokens += decoded
            prompt_evaluated += evaluated[0] if evaluated else 0
            same += picked == str(row["text"])
            continue
        out: list[int] = []
        for token in llm.generate(
            tokens,
            top_k=0,
            top_p=1.0,
            min_p=0.0,
            typical_p=1.0,
            temp=0.0,
            repeat_penalty=1.0,
            grammar=grammar,
        ):
            if llama_token_is_eog(vocab, token):
                break
            out.append(token)
            if len(out) >= row["max_tokens"]:
                break
        prompt_evaluated += evaluated[0] if evaluated else 0
        generated += len(out)
        # Checked after the clock stops for the last time would be cleaner, but detokenizing
        # a few dozen tokens is microseconds beside a decode step.
        text = llm.detokenize(out).decode("utf-8", "replace")
        same += text.strip() == str(row["text"]).strip()
    inference_s = time.perf_counter() - start

    summary = {
        "import_s": round(imported - STARTED, 6),
        "load_s": round(load_s, 6),
        "prep_s": round(prep_s, 6),
        "inference_s": round(inference_s, 6),
        "model_calls": len(work),
        "threads": int(llm.context_params.n_threads),
        "threads_batch": int(llm.context_params.n_threads_batch),
        "prompt_tokens": sum(len(w[0]) for w in work),
        "tokens_evaluated": prompt_evaluated,
        "completion_tokens": generated,
        "choice_requests": sum(1 for w in work if w[1]["choices"]),
        "option_tokens_decoded": option_tokens,
        "replies_identical": same,
    }
    report.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return 0


def main(argv: Sequence[str]) -> int:
    mode, *rest = argv
    if mode == "skilleval":
        suite, report = Path(rest[0]), Path(rest[1])
        profile = Path(rest[rest.index("--profile") + 1]) if "--profile" in rest else None
        return run_skilleval(suite, report, "--record" in rest, profile)
    if mode == "limit":
        requests, report, params = Path(rest[0]), Path(rest[1]), json.loads(rest[2])
        return run_limit(requests, report, params, best=rest[3:] != ["recorded"])
    if mode == "ceiling":
        from ceiling import run_ceiling

        schedule, report, params = Path(rest[0]), Path(rest[1]), json.loads(rest[2])
        return run_ceiling(schedule, report, params)
    if mode == "ceiling-prefill":
        from ceiling_prefill import run_prefill_ceiling

        requests, report, params = Path(rest[0]), Path(rest[1]), json.loads(rest[2])
        return run_prefill_ceiling(requests, report, params, int(rest[3]))
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
