"""The all-at-once ceiling: skilleval's requests through llama.cpp's low-level decode loop,
each prompt evaluated whole as it is admitted (the ceiling before bench/ceiling.py).

    case.py ceiling-prefill REQUESTS REPORT PARAMS WIDTH

The recorded requests (a run's ``*.requests.jsonl``), grouped by purpose in recorded order,
decoded over one batched llama.cpp context with the same model, threads, wait policy and
width as the run: before a prompt starts, a prefix sequence is brought to the prefix it
shares with the next prompt (evaluating only what it did not hold) and copied to the
prompt's sequence, and the rest of the prompt is evaluated there at once, before the next
decode step; then ``width`` sequences decode together, one llama_decode a step, each for
exactly as many tokens as skilleval generated for it. Sampling is the run's: greedy with
llama.cpp's sampler chain, and for a schema-held reply the same grammar, asked the short
way skilleval asks it (engine/greedy_grammar.py). No chat bookkeeping, stop strings,
detokenizing, queueing or grading. After the clock stops, each reply is detokenized and
compared with skilleval's.

It differs from skilleval's scheduling in more than where prompts are evaluated: requests
go by purpose (every generation, then every judge call) in the order they finished, all
available at once; the prefix is shared only with the next prompt, never copied from a
slot or a prefix store; KV cells are sized once, to the replies' actual lengths.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ceiling import apply_wait_policy


def run_prefill_ceiling(requests: Path, report: Path, params: dict[str, Any], width: int) -> int:
    # Threads wait as the compared run's did (set before llama.cpp's library loads).
    policy = apply_wait_policy(params.get("wait_policy"))
    import llama_cpp
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from llama_cpp.llama_grammar import LlamaGrammar

    from skilleval.engine.greedy_grammar import GreedyGrammar, LlamaGrammarJudge, closing_token
    from skilleval.engine.llama_adapter import sample_chain, sampler_chain, vocab_of

    rows = [json.loads(line) for line in requests.read_text(encoding="utf-8").splitlines()]
    # Generations only: a choice (a scored judge verdict) generates nothing, and its time is
    # not in skilleval's tokens per second either.
    rows = [row for row in rows if not row.get("choices")]
    load_start = time.perf_counter()
    llm = Llama(
        model_path=params["path"],
        n_ctx=512,
        n_batch=params["n_batch"],
        n_threads=params["n_threads"],
        n_threads_batch=params["n_threads_batch"],
        seed=0,
        verbose=False,
    )
    load_s = time.perf_counter() - load_start

    eos, bos = int(llm.token_eos()), int(llm.token_bos())
    formatter = Jinja2ChatFormatter(
        template=llm.metadata["tokenizer.chat_template"],
        eos_token=llm.detokenize([eos], special=True).decode("utf-8", "replace"),
        bos_token=llm.detokenize([bos], special=True).decode("utf-8", "replace"),
        stop_token_ids=[eos],
    )
    vocab, n_vocab, closing = vocab_of(llm), int(llm.n_vocab()), closing_token(llm)
    grammars: dict[str, Any] = {}
    groups: dict[str, list[tuple[list[int], int, Any, int]]] = {}
    for index, row in enumerate(rows):
        rendered = formatter(messages=row["messages"])
        tokens = llm.tokenize(
            rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True
        )
        schema = row.get("json_schema")
        if schema is not None:
            key = json.dumps(schema, sort_keys=True)
            if key not in grammars:
                grammars[key] = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            grammar = (grammars[key], row["purpose"] == "judge")
        else:
            grammar = None
        n = max(1, int(row.get("completion_tokens") or 1))
        groups.setdefault(row["purpose"], []).append(([int(t) for t in tokens], n, grammar, index))

    context_start = time.perf_counter()
    # KV cells per sequence sized to the work, as skilleval sizes them.
    need = max(len(t) + n + 1 for work in groups.values() for t, n, _, _ in work)
    cells = min(params["n_ctx"], max(512, -(-need // 256) * 256))
    cparams = llama_cpp.llama_context_default_params()
    cparams.n_seq_max = width + 1
    cparams.kv_unified = False
    cparams.n_ctx = cells * (width + 1)
    cparams.n_batch = cparams.n_ubatch = params["n_batch"]
    cparams.n_threads = params["n_threads"]
    cparams.n_threads_batch = params["n_threads_batch"]
    ctx = llama_cpp.llama_init_from_model(llm.model, cparams)
    memory = llama_cpp.llama_get_memory(ctx)
    batch = llama_cpp.llama_batch_init(max(params["n_batch"], width), 0, 1)
    load_s += time.perf_counter() - context_start

    def decode(items: list[tuple[int, int, int, bool]]) -> None:
        batch.n_tokens = len(items)
        for i, (token, pos, seq, logits) in enumerate(items):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, logits
        if llama_cpp.llama_decode(ctx, batch) != 0:
            raise SystemExit("llama_decode failed")

    def prefill(tokens: list[int], start: int, seq: int, last_logits: bool) -> None:
        pos, size = start, params["n_batch"]
        while pos < len(tokens):
            end = min(pos + size, len(tokens))
            decode(
                [(tokens[p], p, seq, last_logits and p == len(tokens) - 1) for p in range(pos, end)]
            )
            pos = end

    def sampler(grammar: Any) -> Any:
        if grammar is None:
            return sampler_chain(
                n_vocab=n_vocab, penalty_last_n=64, temperature=0.0, top_p=1.0, seed=0
            )
        judge = LlamaGrammarJudge(vocab, grammar[0], n_vocab)
        return GreedyGrammar(judge, closing if grammar[1] else None)

    def sample(s: Any, row: int) -> int:
        if isinstance(s, GreedyGrammar):
            logits = llama_cpp.llama_get_logits_ith(ctx, row)
            import numpy as np

            token = s.pick(np.ctypeslib.as_array(logits, shape=(n_vocab,)))
            s.accept(token)
            return token
        return sample_chain(s, ctx, row)

    def common(a: list[int], b: list[int]) -> int:
        n = 0
        while n < min(len(a), len(b)) - 2 and a[n] == b[n]:
            n += 1
        return n

    evaluated = generated = 0
    replies: list[list[int]] = [[] for _ in rows]
    start = time.perf_counter()
    held: list[int] = []  # what the prefix sequence (id ``width``) holds
    for work in groups.values():
        queue = list(work)
        # slot -> [next token, position, tokens left, sampler, reply]
        live: dict[int, list[Any]] = {}
        while queue or live:
            for slot in range(width):
                if slot not in live and queue:
                    tokens, n, grammar, index = queue.pop(0)
                    target = tokens[: common(tokens, queue[0][0]) if queue else len(tokens) - 2]
                    keep = 0
                    while keep < min(len(held), len(target)) and held[keep] == target[keep]:
                        keep += 1
                    llama_cpp.llama_memory_seq_rm(memory, width, keep, -1)
                    prefill(target, keep, width, False)
                    evaluated += len(target) - keep
                    held = target
                    llama_cpp.llama_memory_seq_rm(memory, slot, -1, -1)
                    llama_cpp.llama_memory_seq_cp(memory, width, slot, -1, -1)
                    prefill(tokens, len(target), slot, True)
                    evaluated += len(tokens) - len(target)
                    s = sampler(grammar)
                    first = sample(s, -1)
                    generated += 1
                    replies[index].append(first)
                    if n > 1:
                        live[slot] = [first, len(tokens), n - 1, s, replies[index]]
            if not live:
                continue
            order = sorted(live)
            decode([(live[s][0], live[s][1], s, True) for s in order])
            for row, s in enumerate(order):
                live[s][0] = sample(live[s][3], row)
                live[s][1] += 1
                live[s][2] -= 1
                live[s][4].append(live[s][0])
                generated += 1
                if live[s][2] == 0:
                    del live[s]
    inference_s = time.perf_counter() - start
    identical = sum(
        llm.detokenize(reply).decode("utf-8", "replace").strip() == str(row["text"]).strip()
        for reply, row in zip(replies, rows, strict=True)
    )
    summary = {
        "load_s": round(load_s, 6),
        "inference_s": round(inference_s, 6),
        "model_calls": len(rows),
        "width": width,
        "threads": params["n_threads"],
        "tokens_evaluated": evaluated,
        "completion_tokens": generated,
        "tokens_per_s": round(generated / inference_s, 2) if inference_s else None,
        "replies_identical": identical,
        "wait_policy": policy,
    }
    report.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return 0
