"""``skilleval doctor``: what this installation is and whether its llama.cpp runs here.

What a bug report needs: skilleval's and llama-cpp-python's versions, the features llama.cpp
was compiled with and the CPU's flags, threads, the OpenMP wait policy a run would choose now,
the canary's verdict (run now when none is remembered), GPU offload, the embedded model's path,
SHA-256 and kernel and lane probe verdicts, the home and cache folders and their sizes, and which extras are installed. Nothing here loads llama.cpp into this
process: what the library says about itself comes from the canary's child process.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

import click

from skilleval.cli.options import emit_json, json_option
from skilleval.engine.embedded import default_model_path
from skilleval.engine.identity import file_identity
from skilleval.engine.kernel_policy import PROMPT_GRID, KernelPolicy
from skilleval.engine.lane_probe import LanePolicy, lane_count
from skilleval.engine.llama_build import cpu_flags, cpu_name, llama_package_dir, tile_state
from skilleval.engine.llama_canary import MEMO_FILE, Canary, canary, canary_model, crash_message
from skilleval.engine.llama_checks import runtime_version
from skilleval.engine.llama_config import LlamaConfig, default_threads
from skilleval.engine.prefix_store import kept_prefixes
from skilleval.engine.wait_policy import decide as decide_wait_policy
from skilleval.engine.wait_policy import others_busy_cores, threads_for
from skilleval.errors import ProviderError
from skilleval.exitcodes import ExitCode
from skilleval.util.home import home_dir
from skilleval.version import __version__

_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@click.command()
@json_option
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Show the installation: versions, llama.cpp's build and this CPU, the canary's verdict,
    GPU offload, the embedded model, the home and caches, and the extras installed.

    Runs the canary (a few tokens decoded in a child process) when no verdict is remembered
    for this llama.cpp build and CPU. Exits 6 when llama.cpp crashes on this machine.
    """
    home = home_dir()
    report = _report(home)
    if as_json:
        emit_json(report)
    else:
        click.echo(_text(report))
    crashed = report["canary"]["verdict"] == "crashed"
    ctx.exit(ExitCode.CONFIG if crashed else ExitCode.OK)


def _report(home: Path) -> dict[str, Any]:
    package = llama_package_dir()
    found = canary(home, canary_model(None), default_threads())
    assert found is not None  # run=True always finds one
    canary_block: dict[str, Any] = {
        **found.to_json(),
        "remembered": found.remembered,
        "memo": str(home / MEMO_FILE),
    }
    if found.verdict == "crashed":
        canary_block["diagnosis"] = crash_message(found)
    others = others_busy_cores()
    now = threads_for(others, default_threads())
    return {
        "skilleval": __version__,
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "platform": platform.platform(terse=True),
        "llama_cpp_python": {
            "installed": package is not None,
            "version": found.version or _version("llama-cpp-python"),
            "path": str(package) if package is not None else None,
            "system_info": found.system_info.strip() or None,
            "instruction_sets": list(found.features),
            "gpu_offload": found.gpu_offload,
        },
        "cpu": {
            "name": cpu_name(),
            "flags": list(cpu_flags()),
            "amx_tile_state": tile_state(),
        },
        # What a run started now would choose (engine/wait_policy.py), from one sample of
        # the machine; this process's own environment is left as it is.
        "threads": {
            "default": default_threads(),
            "now": now.count,
            "reason": now.reason,
            "cpu_count": os.cpu_count(),
        },
        "wait_policy": decide_wait_policy(dict(os.environ), lambda: others).to_json(),
        "canary": canary_block,
        "embedded_model": _embedded(home, found, now.count),
        "home": _folder(home),
        "cache": _folder(home / "cache.db"),
        "prefixes": _prefixes(home),
        "hf_cache": _hf_cache(),
        "extras": _extras(),
    }


def _embedded(home: Path, found: Canary, threads: int) -> dict[str, Any]:
    try:
        path = default_model_path()
        identity = file_identity(path, home)
    except ProviderError as exc:
        return {"installed": False, "error": str(exc)}
    # The kernel probe's verdict, read back by the policy a default run uses, so under the
    # same key (the file's bytes, the library's version, its build's features, no GPU
    # layers); none until a run loads the model.
    build = (identity.sha256 or "", runtime_version(), found.features)
    policy = KernelPolicy(home, 1, LlamaConfig(), lambda: build)
    kernels = policy.recall() if found.verdict == "ok" else None
    # The lane probe's, for the threads (and so the lanes) a run started now would get.
    lanes = LanePolicy(home, LlamaConfig().n_gpu_layers, lambda: build)
    count = lane_count(threads, None, default_threads())
    verdict = lanes.recall(threads, count) if found.verdict == "ok" and count > 1 else None
    return {
        "installed": True,
        "path": str(path),
        "sha256": identity.sha256,
        "size": identity.size,
        "kernels": None if kernels is None else kernels.to_json(),
        "lanes": None if verdict is None else {**verdict.to_json(), "used": verdict.use_lanes},
    }


def _lanes(lanes: dict[str, Any] | None, threads: int) -> str:
    """The lane probe's verdict for a run started now, as one line."""
    count = lane_count(threads, None, default_threads())
    if count <= 1:
        return "none with one core"
    if lanes is None:
        return (
            f"not probed for {threads} thread{'s' if threads > 1 else ''} and {count} lanes yet "
            "(the first run that loads the model does)"
        )
    figures = (
        f"{lanes['lanes_ms']:g} ms a token in lanes, {lanes['one_ms']:g} alone, "
        f"{lanes['batched_ms']:g} batched"
    )
    if lanes["used"]:
        return f"{count} one-thread lanes by default ({figures})"
    return f"one at a time by default ({figures})"


def _kernels(kernels: dict[str, Any] | None) -> str:
    """The kernel probe's verdict as one line."""
    if kernels is None:
        return "not probed on this build yet (the first run that loads the model does, about 1 s)"
    if kernels["splits"] and kernels["batches"]:
        return "same bits however a prompt is split and whatever is decoded beside it"
    said = []
    if not kernels["splits"]:
        said.append(f"prompts on a {PROMPT_GRID}-token grid (a split changed logits)")
    if not kernels["batches"]:
        said.append("one at a time whatever parallel says (batching changed logits)")
    return "; ".join(said)


def _size(path: Path) -> int:
    """Bytes of a file, or of every file under a folder (links not followed)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def _folder(path: Path) -> dict[str, Any]:
    exists = path.exists()
    return {
        "path": str(path.absolute()),
        "exists": exists,
        "size_bytes": _size(path) if exists else 0,
    }


def _prefixes(home: Path) -> dict[str, Any]:
    entries, size = kept_prefixes(home)
    return {"path": str((home / "kv").absolute()), "entries": entries, "size_bytes": size}


def _hf_cache() -> dict[str, Any] | None:
    """huggingface_hub's model cache (where ``hf:`` models go), when it is installed."""
    try:
        from huggingface_hub import constants  # lazy: start-up time
    except ImportError:
        return None
    return _folder(Path(constants.HF_HUB_CACHE))


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version  # lazy: start-up time

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _extras() -> dict[str, Any]:
    """Each extra of skilleval's package, and which of its requirements are missing."""
    from importlib.metadata import PackageNotFoundError, requires  # lazy: start-up time

    try:
        wanted = requires("skilleval") or []
    except PackageNotFoundError:
        return {}
    extras: dict[str, list[str]] = {}
    for line in wanted:
        marker = _EXTRA.search(line)
        name = _NAME.match(line)
        if marker is None or name is None:
            continue
        extras.setdefault(marker.group(1), []).append(name.group(0))
    out: dict[str, Any] = {}
    for extra, names in sorted(extras.items()):
        missing = sorted({n for n in names if _version(n) is None})
        out[extra] = {"installed": not missing, "missing": missing}
    return out


def _text(report: dict[str, Any]) -> str:
    llama = report["llama_cpp_python"]
    cpu = report["cpu"]
    found = report["canary"]
    model = report["embedded_model"]
    lines = [
        f"skilleval          {report['skilleval']}",
        f"python             {report['python']['version']} ({report['python']['executable']})",
        f"platform           {report['platform']}",
    ]
    if llama["installed"]:
        lines += [
            f"llama-cpp-python   {llama['version'] or 'unknown version'} ({llama['path']})",
            f"llama.cpp build    {llama['system_info'] or 'unknown'}",
            f"GPU offload        {_yes(llama['gpu_offload'])}",
        ]
    else:
        lines.append("llama-cpp-python   not installed (pip install 'skilleval[llama]')")
    tiles = cpu["amx_tile_state"]
    lines += [
        f"CPU                {cpu['name']}",
        f"CPU flags          {' '.join(cpu['flags']) or 'not listed by the OS'}",
        f"AMX tile state     {'unknown' if tiles is None else 'enabled' if tiles else 'not enabled'}",
        f"threads            {report['threads']['now']} now, {report['threads']['reason']} "
        f"({report['threads']['cpu_count']} CPUs)",
        f"wait policy        {report['wait_policy']['policy']}: {report['wait_policy']['reason']}",
        f"canary             {_verdict(found)}",
    ]
    if found.get("diagnosis"):
        lines.append(f"  {found['diagnosis']}")
    if model["installed"]:
        lines += [
            f"embedded model     {model['path']}",
            f"  sha256           {model['sha256']} ({model['size']:,} bytes)",
            f"  kernels          {_kernels(model['kernels'])}",
            f"  lanes            {_lanes(model['lanes'], report['threads']['now'])}",
        ]
    else:
        lines.append(f"embedded model     not installed: {model['error']}")
    lines += [
        _where("home", report["home"]),
        _where("response cache", report["cache"]),
        f"prompt prefixes    {report['prefixes']['path']}: {report['prefixes']['entries']} "
        f"entries, {report['prefixes']['size_bytes']:,} bytes",
    ]
    if report["hf_cache"] is not None:
        lines.append(_where("hub models", report["hf_cache"]))
    extras = report["extras"]
    if extras:
        listed = [
            name if e["installed"] else f"{name} (missing: {', '.join(e['missing'])})"
            for name, e in extras.items()
        ]
        lines.append(f"extras             {'; '.join(listed)}")
    return "\n".join(lines)


def _yes(value: bool | None) -> str:
    if value is None:
        return "unknown"
    return "available" if value else "not in this build (CPU only)"


def _verdict(found: dict[str, Any]) -> str:
    source = " (remembered)" if found.get("remembered") else ""
    if found["verdict"] == "ok":
        return f"ok: decoded a test prompt on {found['checked_at']}{source}"
    if found["verdict"] == "crashed":
        return f"CRASHED with {found['signal']} at {found['stage']}{source}"
    return f"{found['verdict']}: {found.get('detail') or 'no model to decode with'}"


def _where(label: str, block: dict[str, Any]) -> str:
    state = f"{block['size_bytes']:,} bytes" if block["exists"] else "not created yet"
    return f"{label:<18} {block['path']}: {state}"
