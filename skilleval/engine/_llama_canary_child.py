"""The canary: load llama.cpp and decode a few tokens, in a process of its own.

Started by :mod:`skilleval.engine.llama_canary` as ``python THIS_FILE JSON``, with JSON giving
the folder that holds the ``llama_cpp`` package the parent would import, the GGUF to decode
with (or none) and the thread count. It imports nothing from skilleval. It writes one JSON
object a line to stdout, flushed at once, so the parent knows how far it got if llama.cpp
kills it: ``{"stage": ...}`` before each step, ``{"info": ...}`` once the library is loaded,
``{"done": N}`` at the end.
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROMPT = (
    "A canary checks that the library runs on this machine before anything else uses it. "
    "It reads a short text, long enough that the prompt is evaluated in one batch of many "
    "tokens, the way a real request is, and then it writes a few tokens of its own, one at "
    "a time. If the instructions the library was compiled with are not allowed here, this "
    "is where it stops, and the process that started it can say why. Count to ten: one, two,"
)


def _say(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main() -> int:
    job = json.loads(sys.argv[1])
    # Not this file's folder (skilleval/engine), but the llama_cpp the parent would import.
    del sys.path[0]
    if job.get("llama_dir"):
        sys.path.insert(0, job["llama_dir"])
    _say(stage="import")
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    supports = getattr(llama_cpp, "llama_supports_gpu_offload", None)
    _say(
        info={
            "version": str(getattr(llama_cpp, "__version__", "") or ""),
            "system_info": info.decode("utf-8", "replace")
            if isinstance(info, bytes)
            else str(info),
            "gpu_offload": bool(supports()) if callable(supports) else None,
        }
    )
    if not job.get("model"):
        _say(done=0)
        return 0
    _say(stage="load")
    llm = llama_cpp.Llama(
        model_path=job["model"],
        n_ctx=512,
        n_batch=512,
        n_ubatch=512,
        n_threads=job.get("threads"),
        n_threads_batch=job.get("threads"),
        n_gpu_layers=0,
        verbose=False,
    )
    _say(stage="decode")
    out: Any = llm.create_completion(PROMPT, max_tokens=4, temperature=0.0, top_k=1)
    _say(done=int(out["usage"]["completion_tokens"]))
    llm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
