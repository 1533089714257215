"""The measurement behind skilleval's regex engine (docs/assertions.md, "Regular expressions").

    python bench/regex_engines.py

Times Python's ``re``, the ``regex`` package with ``timeout=`` and, when ``google-re2`` is
installed (it is not a dependency: ``pip install google-re2``), RE2, on backtracking traps
and on ordinary patterns, then prints which Python-``re`` patterns each engine refuses or
reads differently, and how long each takes to compile a fixed repeat (``regex`` writes
the repeat out, which is why skilleval caps it). Best of five runs; the traps and the
compiles run once.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import regex

re2: ModuleType | None
try:
    import re2  # type: ignore[import-not-found, no-redef]
except ImportError:
    re2 = None

HOSTILE = "a" * 50 + "b"
ORDINARY = [
    (r"(?i)hello", "x" * 1000 + "Hello"),
    (r"(?m)^Total: \d+$", ("line of text\n" * 80) + "Total: 42\n"),
    (r"\b\w+@\w+\.com\b", "lorem ipsum " * 100 + "me@example.com"),
    (r"\d{3}-\d{4}", "no numbers " * 100_000),
]
REPEATS = [r"a{10000}", r"a{100000}", r"a{1000000}", r"(?:a{100}){1000}"]
MEANING = [
    (r"foo(?=bar)", "foobar"),
    (r"(?<!x)y", "ay"),
    (r"(\w)\1", "hello"),
    (r"a++b", "aab"),
    (r"\d", "\u0663"),
    (r"\bcafé\b", "un café noir"),
]


def best(fn: Callable[[], Any], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    print("re, (a+)+$ on n a's and a b (doubles with each a):")
    for n in (18, 20, 22):
        text = "a" * n + "b"
        print(f"  n={n}: {best(lambda t=text: re.search(r'(a+)+$', t), 1) * 1000:8.1f} ms")
    print("regex with timeout=1.0 and RE2, on 50 a's and a b:")
    for pattern in (r"(a+)+$", r"(a|aa)+$", r"(a|a?)+$"):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            regex.search(pattern, HOSTILE, timeout=1.0)
            outcome = "finished"
        except TimeoutError:
            outcome = "timed out"
        took = (time.perf_counter() - start) * 1000
        used = (time.process_time() - cpu) * 1000
        line = f"  {pattern:10} regex: {outcome} after {took:7.1f} ms ({used:7.1f} ms CPU)"
        if re2 is not None:
            compiled = re2.compile(pattern)
            line += f"; re2: {best(lambda c=compiled: c.search(HOSTILE)) * 1e6:6.1f} µs"
        print(line)
    print("ordinary patterns, search only (µs):")
    for pattern, text in ORDINARY:
        plain, timed = re.compile(pattern), regex.compile(pattern)
        took_re = best(lambda p=plain, t=text: p.search(t))
        took_regex = best(lambda p=timed, t=text: p.search(t, timeout=1.0))
        line = f"  {pattern:22} {len(text):>9,} chars  re {took_re * 1e6:9.1f}"
        line += f"  regex {took_regex * 1e6:9.1f}"
        if re2 is not None:
            fast = re2.compile(pattern)
            line += f"  re2 {best(lambda f=fast, t=text: f.search(t)) * 1e6:9.1f}"
        print(line)
    print("what each engine makes of re's syntax:")
    engines: list[tuple[str, Any]] = [("re", re), ("regex", regex)]
    if re2 is not None:
        engines.append(("re2", re2))
    for pattern, text in MEANING:
        found = []
        for name, module in engines:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    match = module.search(pattern, text)
                found.append(f"{name}={match.group(0)!r}" if match else f"{name}=no match")
            except Exception as exc:  # each engine has its own error class
                found.append(f"{name}=refused ({type(exc).__name__})")
        print(f"  {pattern:16} on {text!r:16} " + "; ".join(found))
    print("compiling a fixed repeat, uncached (ms):")
    for pattern in REPEATS:
        took_re = best(lambda p=pattern: re.compile(p, re.NOFLAG), 1)
        re.purge()
        took_regex = best(lambda p=pattern: regex.compile(p), 1)
        regex.purge()
        print(f"  {pattern:18} re {took_re * 1000:9.2f}  regex {took_regex * 1000:9.1f}")


if __name__ == "__main__":
    main()
