"""What llama.cpp's CPU kernels give batching, per quantisation of the same model.

    .venv/bin/python bench/kernels.py [--work DIR] [--rounds R] [--steps N] [--busy N]

The embedded model (SmolLM2-135M, Q4_1) is requantised into DIR (Q4_0, Q8_0, Q4_K_M; made
once with llama.cpp's own quantiser, ``allow_requantize``), and each file is measured in this
one process, so every row sees the same machine:

* decode step: milliseconds for one ``llama_decode`` of 1, 2 and 4 sequences (one token
  each, after a 64-token prompt per sequence), widths interleaved over R rounds, medians of
  N steps;
* ``per token at width 4``: a step of 4 ÷ four steps of 1. Batching can only save where this
  is well under 1: near 1 the kernels' cost grows with the width and nothing is shared;
* prompt: milliseconds to evaluate 256 tokens in one batch;
* same bits: whether a sequence's logits are bitwise equal decoded alone and beside three
  others, and whether a 60-token prompt's last logits are bitwise equal evaluated whole and
  split (57+3, 30+30, every 2 tokens). Both hold for a file where skilleval's replies do not
  depend on the batch or on what was evaluated before (docs/engine.md, "Same bytes as one at
  a time").

Attention is computed as the engine computes it, without flash attention (llama.cpp's own
default turns it on). Threads and wait policy are what a run would choose now
(engine/wait_policy.py); nothing is forced. ``--busy N`` runs it again with N spinning
processes beside it.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from busy import busy, conditions
from common import child_json

TYPES = (("Q4_0", 2), ("Q8_0", 7), ("Q4_K_M", 15))
"""Quantisations made from the embedded model, with llama.cpp's ftype numbers."""


def requantised(work: Path) -> list[tuple[str, Path]]:
    """The embedded model and its requantised copies under ``work`` (made when missing)."""
    import llama_cpp

    from skilleval.engine.embedded import default_model_path

    source = default_model_path()
    files = [("Q4_1", source)]
    for name, ftype in TYPES:
        target = work / f"{source.stem.split('.')[0]}.{name}.gguf"
        if not target.is_file():
            params = llama_cpp.llama_model_quantize_default_params()
            params.ftype, params.allow_requantize = ftype, True
            partial = target.with_suffix(".part")
            code = llama_cpp.llama_model_quantize(
                str(source).encode(), str(partial).encode(), ctypes.byref(params)
            )
            if code != 0:
                raise SystemExit(f"quantising to {name} failed ({code})")
            partial.rename(target)
        files.append((name, target))
    return files


class Context:
    """One model with a 4-sequence context, decoding raw batches."""

    def __init__(self, path: Path, threads: int) -> None:
        import llama_cpp

        self.lib = llama_cpp
        self.model = llama_cpp.llama_model_load_from_file(
            str(path).encode(), llama_cpp.llama_model_default_params()
        )
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(self.model))
        params = llama_cpp.llama_context_default_params()
        params.n_seq_max, params.kv_unified = 4, False
        params.n_ctx, params.n_batch, params.n_ubatch = 4 * 512, 512, 512
        params.n_threads = params.n_threads_batch = threads
        # Attention as the engine computes it: llama-cpp-python's default, no flash attention
        # (llama.cpp's own default turns it on, which changes both the costs and the bits).
        params.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        self.ctx = llama_cpp.llama_init_from_model(self.model, params)
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(512, 0, 1)

    def decode(self, items: list[tuple[int, int, int, bool]]) -> None:
        batch = self.batch
        batch.n_tokens = len(items)
        for i, (token, pos, seq, logits) in enumerate(items):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
            batch.seq_id[i][0], batch.logits[i] = seq, logits
        if self.lib.llama_decode(self.ctx, batch) != 0:
            raise SystemExit("llama_decode failed")

    def logits(self, index: int) -> bytes:
        pointer = self.lib.llama_get_logits_ith(self.ctx, index)
        return ctypes.string_at(pointer, 4 * self.n_vocab)

    def clear(self, seq: int, start: int = -1) -> None:
        self.lib.llama_memory_seq_rm(self.memory, seq, start, -1)

    def close(self) -> None:
        self.lib.llama_batch_free(self.batch)
        self.lib.llama_free(self.ctx)
        self.lib.llama_model_free(self.model)


def _prompt(seq: int, length: int) -> list[int]:
    return [100 + (p * (seq + 3)) % 90 for p in range(length)]


def measure(path: Path, threads: int, rounds: int, steps: int) -> dict[str, Any]:
    ctx = Context(path, threads)
    try:
        prompt = 64
        for seq in range(4):
            ctx.clear(seq)
            ctx.decode([(t, p, seq, False) for p, t in enumerate(_prompt(seq, prompt))])
        times: dict[int, list[float]] = {1: [], 2: [], 4: []}
        for _ in range(rounds):
            for width in times:
                for seq in range(4):
                    ctx.clear(seq, prompt)
                start = time.perf_counter()
                for k in range(steps):
                    ctx.decode([(200 + k, prompt + k, s, True) for s in range(width)])
                times[width].append((time.perf_counter() - start) / steps * 1000)
        step = {w: sorted(v)[len(v) // 2] for w, v in times.items()}
        ctx.clear(0)
        start = time.perf_counter()
        ctx.decode([(t, p, 0, p == 255) for p, t in enumerate(_prompt(0, 256))])
        prompt_ms = (time.perf_counter() - start) * 1000
        return {
            "step_ms": {str(w): round(v, 3) for w, v in step.items()},
            "per_token_at_4": round(step[4] / (4 * step[1]), 3),
            "prompt_256_ms": round(prompt_ms, 1),
            **same_bits(ctx),
        }
    finally:
        ctx.close()


def same_bits(ctx: Context) -> dict[str, bool]:
    """Whether batch composition and prompt splits leave a sequence's logits unchanged."""
    length = 40
    for seq in range(4):
        ctx.clear(seq)
        for p, t in enumerate(_prompt(seq, length)):
            ctx.decode([(t, p, seq, False)])
    ctx.decode([(300, length, 0, True)])
    alone = ctx.logits(0)
    for seq in range(4):
        ctx.clear(seq, length)
    ctx.decode([(300, length, s, True) for s in range(4)])
    together = ctx.logits(0)

    tokens = _prompt(0, 60)

    def last_logits(cuts: list[int]) -> bytes:
        ctx.clear(0)
        start, last = 0, 0
        for end in [*cuts, len(tokens)]:
            ctx.decode([(tokens[p], p, 0, p == len(tokens) - 1) for p in range(start, end)])
            last, start = end - start - 1, end
        return ctx.logits(last)

    whole = last_logits([])
    splits = [[57], [30], list(range(2, 60, 2))]
    return {
        "batch_same_bits": alone == together,
        "splits_same_bits": all(last_logits(cuts) == whole for cuts in splits),
    }


def child(work: Path, rounds: int, steps: int) -> int:
    """One condition, in a process of its own: the wait policy and the threads are chosen
    from the machine as it is now, before llama.cpp's library loads, as a run chooses them."""
    from skilleval.engine.llama_config import default_threads
    from skilleval.engine.wait_policy import choose, choose_threads

    policy = choose()
    threads = choose_threads(default_threads())
    rows = {}
    for name, path in requantised(work):
        rows[name] = {
            "size_mb": round(path.stat().st_size / 1e6, 1),
            **measure(path, threads.count, rounds, steps),
        }
    print(json.dumps({"policy": policy.to_json(), "threads": threads.count, "rows": rows}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="where the requantised files are kept")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--busy", type=int, help="busy processes (default: one per core; 0: none)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="skilleval-kernels-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.child:
        return child(work, args.rounds, args.steps)
    in_child = [sys.executable, __file__, "--work", str(work), "--child"]
    report: dict[str, Any] = {}
    for condition, count in conditions(args.busy):
        with busy(count):
            time.sleep(0.5 if count else 0)
            found = child_json(
                [*in_child, "--rounds", str(args.rounds), "--steps", str(args.steps)]
            )
        report[condition] = found
        print(f"\n{condition}: {found['threads']} threads, wait policy {found['policy']['policy']}")
        print(
            "| file | MB | step ms, 1 / 2 / 4 sequences | per token at width 4 | "
            "prompt 256 ms | same bits: batch / splits |"
        )
        print("|---|---|---|---|---|---|")
        for name, row in found["rows"].items():
            step = row["step_ms"]
            print(
                f"| {name} | {row['size_mb']:.0f} | {step['1']:.1f} / {step['2']:.1f} / "
                f"{step['4']:.1f} | {row['per_token_at_4']:.2f} | {row['prompt_256_ms']:.0f} | "
                f"{'yes' if row['batch_same_bits'] else 'no'} / "
                f"{'yes' if row['splits_same_bits'] else 'no'} |"
            )
    (work / "kernels.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(f"\nreport: {work / 'kernels.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
