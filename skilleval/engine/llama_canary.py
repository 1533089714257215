"""The canary: does the installed llama.cpp run on this CPU? Asked once, in a child process.

A llama.cpp build can crash the process that uses it: compiled with AMX tile instructions on
a machine whose OS (or hypervisor) has not enabled tile state, or with an instruction set the
CPU lacks. The process then dies by a signal, with no message and no results. So before the
first in-process call with a given library and CPU, a child process (``sys.executable``
running ``_llama_canary_child.py``, with a time limit) loads llama.cpp and decodes a few
tokens, and the verdict is kept in ``<home>/llama-canary.json``, keyed by llama-cpp-python's
shared libraries (path, size, modification time), the CPU (its name and flags, the kernel
release) and the interpreter. Rebuilding the library, moving to another machine or another
Python asks again.

A child that dies by a crash signal (SIGSEGV, SIGILL, SIGBUS, SIGFPE, SIGABRT) gives an
:class:`~skilleval.errors.InstallationError` of one line: what crashed, the likely cause
(from llama.cpp's system info and the CPU flags) and the command that rebuilds the library.
Anything else that stops the child (a time limit, a model that does not load, another signal)
proves nothing about the library: it is not remembered, and the caller goes on.

A verdict read from the memo is trusted only when it has the shape this module writes and its
digest matches: a damaged entry is a miss, and the canary runs again.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from skilleval.engine.embedded import default_model_path
from skilleval.engine.llama_build import (
    cpu_flags,
    cpu_name,
    crash_cause,
    features,
    library_files,
    llama_package_dir,
    rebuild_command,
    tile_state,
)
from skilleval.errors import InstallationError, ProviderError
from skilleval.util.memo import recall_sealed, remember_sealed

__all__ = [
    "CRASH_SIGNALS",
    "MEMO_FILE",
    "TIMEOUT_S",
    "Canary",
    "canary",
    "canary_key",
    "canary_model",
    "crash_message",
    "ensure_runs",
]

MEMO_FILE = "llama-canary.json"
"""The memo's file name under the home."""

TIMEOUT_S = 180.0
"""How long the child may take: importing the library, loading the model and decoding."""

CHILD = Path(__file__).with_name("_llama_canary_child.py")

CRASH_SIGNALS = ("SIGSEGV", "SIGILL", "SIGBUS", "SIGFPE", "SIGABRT", "SIGSYS")
"""Signals that mean the library crashed (SIGKILL, from the OOM killer, proves nothing)."""

_WINDOWS_CRASHES = {0xC0000005: "SIGSEGV", 0xC000001D: "SIGILL", 0xC0000409: "SIGABRT"}
"""Windows exit statuses of an access violation, an illegal instruction, a failed check."""

_STAGES = {
    "import": "loading the library",
    "load": "loading a model",
    "decode": "decoding a test prompt",
}

Verdict = Literal["ok", "crashed", "inconclusive", "not run"]


@dataclass(frozen=True, slots=True)
class Canary:
    """What the canary found.

    Attributes:
        verdict: ``ok`` (it decoded), ``crashed`` (killed by a crash signal), ``inconclusive``
            (stopped for another reason: ``detail`` says which) or ``not run`` (no model to
            decode with, or llama-cpp-python is not installed).
        version: llama-cpp-python's ``__version__``, as the child imported it.
        system_info: ``llama_print_system_info()``, when the child got that far.
        gpu_offload: ``llama_supports_gpu_offload()``.
        signal: The crash signal's name (``SIGSEGV``).
        stage: The step the child was at when it stopped (``import``, ``load``, ``decode``).
        model: The GGUF it decoded with.
        checked_at: When it ran (UTC, ISO 8601).
        remembered: Read from the memo rather than run now.
        detail: Why an inconclusive run proves nothing.
    """

    verdict: Verdict
    version: str | None = None
    system_info: str = ""
    gpu_offload: bool | None = None
    signal: str | None = None
    stage: str | None = None
    model: str | None = None
    checked_at: str | None = None
    remembered: bool = field(default=False, compare=False)
    detail: str | None = None

    @property
    def features(self) -> tuple[str, ...]:
        """The features llama.cpp says it was compiled with."""
        return features(self.system_info)

    def to_json(self) -> dict[str, Any]:
        """The memo's entry (and ``doctor --json``'s block), without ``remembered``."""
        return {
            "verdict": self.verdict,
            "version": self.version,
            "system_info": self.system_info,
            "gpu_offload": self.gpu_offload,
            "signal": self.signal,
            "stage": self.stage,
            "model": self.model,
            "checked_at": self.checked_at,
            "detail": self.detail,
        }


_known: dict[str, Canary] = {}
"""Verdicts found in this process, by key: a run asks for one on every request's cache salt."""
_lock = threading.Lock()


@functools.cache
def canary_key() -> str:
    """What the verdict depends on: llama-cpp-python's shared libraries, the CPU and the
    kernel that runs it, and the interpreter (worked out once per process)."""
    facts = {
        "libraries": library_files(llama_package_dir()),
        "lib_path": os.environ.get("LLAMA_CPP_LIB_PATH", ""),
        "cpu": cpu_name(),
        "flags": " ".join(cpu_flags()),
        "kernel": f"{platform.system()} {platform.release()}",
        "python": [sys.executable, sys.version],
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode("utf-8")).hexdigest()


def canary_model(fallback: Path | None) -> Path | None:
    """The GGUF the canary decodes with: the embedded model when it is installed (small and
    fast to load), else ``fallback`` (the model about to be loaded)."""
    try:
        return default_model_path()
    except ProviderError:
        return fallback


def canary(
    home: Path, model: Path | None, threads: int | None = None, *, run: bool = True
) -> Canary | None:
    """The canary's verdict for this library and CPU: known in this process, remembered under
    ``home``, or found now by running it (when ``run``; else None).

    ``model``: the GGUF to decode with (see :func:`canary_model`); None runs the child only to
    read llama.cpp's system info (verdict ``not run``).
    """
    key = canary_key()
    known = _known.get(key)  # every request's cache salt asks: answered without the lock
    if known is not None:
        return known
    if llama_package_dir() is None:
        return Canary("not run", detail="llama-cpp-python is not installed")
    with _lock:
        found = _known.get(key) or _remembered(home / MEMO_FILE, key)
        if found is None and run:
            found = _run_child(model, threads)
            if found.verdict in ("ok", "crashed"):
                remember_sealed(home / MEMO_FILE, key, found.to_json())
        if found is not None and found.verdict != "not run":
            # An inconclusive run is not kept on disk, but not repeated in this process either.
            _known[key] = found
        return found


def ensure_runs(home: Path, model: Path | None, threads: int | None = None) -> Canary:
    """:func:`canary`, raising when the library crashed.

    Raises:
        InstallationError: The canary died by a crash signal; the message is one line.
    """
    found = canary(home, model, threads)
    assert found is not None  # run=True always finds one
    if found.verdict == "crashed":
        raise InstallationError(crash_message(found, home))
    return found


def crash_message(found: Canary, home: Path | None = None) -> str:
    """One line: what crashed, the likely cause and the command that rebuilds the library."""
    cause, amx = crash_cause(found.features, cpu_flags(), tile_state())
    where = _STAGES.get(found.stage or "", "starting")
    version = f"llama-cpp-python {found.version}" if found.version else "llama-cpp-python"
    memo = f" (remembered in {home / MEMO_FILE} until the library changes)" if home else ""
    return (
        f"llama.cpp crashed with {found.signal} inside {version} while {where} in its canary "
        f"child process{memo}: likely cause: {cause}; rebuild it with: "
        f"{rebuild_command(found.version, amx)}"
    )


# -- the child ---------------------------------------------------------------------------------


def _run_child(model: Path | None, threads: int | None) -> Canary:
    package = llama_package_dir()
    job = {
        "llama_dir": str(package.parent) if package is not None else None,
        "model": str(model) if model is not None else None,
        "threads": threads,
    }
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    try:
        done = subprocess.run(
            [sys.executable, str(CHILD), json.dumps(job)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        said = _said(exc.stdout or b"")
        return _found(said, "inconclusive", now, model, detail=f"no answer in {TIMEOUT_S:g} s")
    except OSError as exc:
        return Canary("inconclusive", checked_at=now, detail=f"cannot start: {exc}")
    said = _said(done.stdout)
    crash = _crash_signal(done.returncode)
    if crash is not None:
        return _found(said, "crashed", now, model, signal_name=crash)
    if done.returncode == 0 and "done" in said:
        return _found(said, "ok" if model is not None else "not run", now, model)
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()
    why = tail[-1] if tail else f"exit status {done.returncode}"
    return _found(said, "inconclusive", now, model, detail=why)


def _said(stdout: bytes) -> dict[str, Any]:
    """What the child wrote: its last stage, its info and whether it finished."""
    said: dict[str, Any] = {}
    for line in stdout.decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            said.update(item)
    return said


def _found(
    said: dict[str, Any],
    verdict: Verdict,
    now: str,
    model: Path | None,
    *,
    signal_name: str | None = None,
    detail: str | None = None,
) -> Canary:
    info = said.get("info") if isinstance(said.get("info"), dict) else {}
    assert isinstance(info, dict)
    offload = info.get("gpu_offload")
    return Canary(
        verdict,
        version=str(info["version"]) if info.get("version") else None,
        system_info=str(info.get("system_info") or ""),
        gpu_offload=offload if isinstance(offload, bool) else None,
        signal=signal_name,
        stage=str(said["stage"]) if isinstance(said.get("stage"), str) else None,
        model=str(model) if model is not None else None,
        checked_at=now,
        detail=detail,
    )


def _crash_signal(code: int) -> str | None:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            return None
        return name if name in CRASH_SIGNALS else None
    return _WINDOWS_CRASHES.get(code & 0xFFFFFFFF) if sys.platform == "win32" else None


# -- the memo ----------------------------------------------------------------------------------


def _remembered(memo: Path, key: str) -> Canary | None:
    """The verdict kept under ``key``, or None when there is none or it is damaged."""
    entry = recall_sealed(memo, key)
    if entry is None:
        return None
    verdict = entry.get("verdict")
    crash = entry.get("signal")
    texts = ("version", "stage", "model", "checked_at", "detail")
    if (
        verdict not in ("ok", "crashed")
        or (verdict == "crashed") != isinstance(crash, str)
        or (crash is not None and crash not in CRASH_SIGNALS)
        or not isinstance(entry.get("system_info"), str)
        or not isinstance(entry.get("gpu_offload"), bool | None)
        or any(not isinstance(entry.get(k), str | None) for k in texts)
    ):
        return None
    return Canary(
        verdict,
        version=entry["version"],
        system_info=entry["system_info"],
        gpu_offload=entry["gpu_offload"],
        signal=crash,
        stage=entry["stage"],
        model=entry["model"],
        checked_at=entry["checked_at"],
        remembered=True,
        detail=entry["detail"],
    )
