"""What the installed llama.cpp build is and what this CPU can run, read without loading it.

llama-cpp-python's shared libraries (their paths, sizes and modification times), the CPU's
flags as the operating system lists them, the features llama.cpp says it was compiled with
(``llama_print_system_info()``: ``AVX2 = 1 | AMX_INT8 = 1 | ...``), and, when the build
crashes on this machine, the likely cause and the command that rebuilds it.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "AMX_FLAGS",
    "GPU_BACKENDS",
    "LIBRARY_SUFFIXES",
    "cpu_flags",
    "cpu_name",
    "crash_cause",
    "features",
    "library_files",
    "llama_package_dir",
    "rebuild_command",
    "tile_state",
    "warn_without_gpu",
]

LIBRARY_SUFFIXES = (".so", ".dylib", ".dll")
"""How llama-cpp-python's shared libraries end (``libllama.so.0.5.0`` counts too)."""

AMX_FLAGS = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"

GPU_BACKENDS = (
    "-DGGML_CUDA=on (NVIDIA), -DGGML_METAL=on (Apple), -DGGML_VULKAN=on (any Vulkan GPU), "
    "-DGGML_HIP=on (AMD ROCm)"
)
"""The CMake flags that build llama.cpp with a GPU backend."""

_warned_gpu: list[bool] = []
"""Compiler flags that keep AMX tile instructions out of a native build."""

# llama.cpp's name for an instruction set (its system info), and the names the operating
# system gives the CPU flags it needs: x86 /proc/cpuinfo, ARM /proc/cpuinfo, macOS sysctl.
_NEEDS: dict[str, tuple[str, ...]] = {
    "SSE3": ("pni", "sse3"),
    "SSSE3": ("ssse3",),
    "AVX": ("avx", "avx1.0"),
    "AVX2": ("avx2",),
    "AVX_VNNI": ("avx_vnni", "avxvnni"),
    "F16C": ("f16c",),
    "FMA": ("fma",),
    "BMI2": ("bmi2",),
    "AVX512": ("avx512f",),
    "AVX512_VBMI": ("avx512vbmi",),
    "AVX512_VNNI": ("avx512_vnni", "avx512vnni"),
    "AVX512_BF16": ("avx512_bf16", "avx512bf16"),
    "AMX_INT8": ("amx_int8", "amxint8"),
    "AMX_BF16": ("amx_bf16", "amxbf16"),
    "NEON": ("asimd", "neon"),
    "ARM_FMA": ("asimd", "neon"),
    "FP16_VA": ("asimdhp", "fphp"),
    "DOTPROD": ("asimddp",),
    "MATMUL_INT8": ("i8mm",),
    "SVE": ("sve",),
    "SME": ("sme",),
}
"""Only instruction sets the OS names: kernel options (LLAMAFILE, OPENMP, REPACK) are not
checked against the CPU."""

_FEATURE = re.compile(r"([A-Z][A-Z0-9_]*) = 1\b")


def llama_package_dir() -> Path | None:
    """The folder of the ``llama_cpp`` package this interpreter would import, found without
    importing it; None when it is not installed."""
    spec = importlib.util.find_spec("llama_cpp")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]).resolve() if locations else None


def library_files(package: Path | None) -> list[tuple[str, int, int]]:
    """Path, size and modification time (ns) of each shared library llama-cpp-python loads:
    those inside its package, and those in ``$LLAMA_CPP_LIB_PATH`` when that is set."""
    folders = [package] if package is not None else []
    if os.environ.get("LLAMA_CPP_LIB_PATH"):
        folders.append(Path(os.environ["LLAMA_CPP_LIB_PATH"]))
    found = []
    for folder in folders:
        for root, _dirs, files in os.walk(folder):
            for name in files:
                if not any(s in name for s in LIBRARY_SUFFIXES):
                    continue
                path = os.path.join(root, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                found.append((path, st.st_size, st.st_mtime_ns))
    return sorted(found)


@functools.cache
def _cpu_text() -> tuple[str, str]:
    """The CPU's name and flags line, as the operating system gives them."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        text = ""
    if text:
        name = re.search(r"^(?:model name|Model|Hardware|CPU part)\s*:\s*(.*)$", text, re.M)
        flags = re.search(r"^(?:flags|Features)\s*:\s*(.*)$", text, re.M)
        return (
            name.group(1).strip() if name else platform.machine(),
            flags.group(1) if flags else "",
        )
    if sys.platform == "darwin":
        keys = ("machdep.cpu.features", "machdep.cpu.leaf7_features")
        flags = " ".join(_sysctl(key) for key in keys)
        if not flags.strip():  # Apple silicon lists its features one sysctl at a time
            flags = " ".join(_arm_mac_features())
        return _sysctl("machdep.cpu.brand_string") or platform.machine(), flags
    return platform.processor() or platform.machine(), ""


def _sysctl(key: str) -> str:
    try:
        out = subprocess.run(
            ["sysctl", "-n", key], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _arm_mac_features() -> list[str]:
    names = {"FEAT_DotProd": "asimddp", "FEAT_I8MM": "i8mm", "FEAT_FP16": "asimdhp"}
    found = ["asimd"] if platform.machine() == "arm64" else []
    for key, flag in names.items():
        if _sysctl(f"hw.optional.arm.{key}") == "1":
            found.append(flag)
    return found


def cpu_name() -> str:
    """The CPU's model name (``AMD EPYC 9R45``), or the machine type when the OS gives none."""
    return _cpu_text()[0]


def cpu_flags() -> tuple[str, ...]:
    """The CPU's flags, lower case, as the operating system lists them (empty when it lists
    none)."""
    return tuple(flag.lower() for flag in _cpu_text()[1].split())


def features(system_info: str) -> tuple[str, ...]:
    """The features llama.cpp's system info says are on (``AVX2 = 1``), in its order: the
    instruction sets compiled in and the kernel options (LLAMAFILE, REPACK, OPENMP)."""
    seen: dict[str, None] = {}
    for name in _FEATURE.findall(system_info):
        seen.setdefault(name, None)
    return tuple(seen)


def tile_state() -> bool | None:
    """Whether the operating system lets processes use AMX tile data (Linux on x86-64 only;
    None where it cannot be asked). Asked with ``arch_prctl(ARCH_GET_XCOMP_SUPP)``, which only
    reads the supported state components."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    arch_prctl = 158  # the syscall's number on x86-64
    get_xcomp_supp = 0x1021
    xtiledata = 1 << 18
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        mask = ctypes.c_uint64(0)
        if libc.syscall(arch_prctl, get_xcomp_supp, ctypes.byref(mask)) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return bool(mask.value & xtiledata)


def crash_cause(built: Sequence[str], flags: Iterable[str], tiles: bool | None) -> tuple[str, bool]:
    """The likely cause of a crash, in words, and whether AMX is to blame.

    Args:
        built: The features llama.cpp was compiled with (:func:`features`).
        flags: The CPU's flags (:func:`cpu_flags`).
        tiles: Whether the OS enabled AMX tile state (:func:`tile_state`).
    """
    have = set(flags)
    amx = [f for f in built if f.startswith("AMX")]
    missing = [f for f in built if f in _NEEDS and have and not have & set(_NEEDS[f])]
    if amx:
        listed = ", ".join(f"{f} = 1" for f in amx)
        if have and "amx_tile" not in have and "amxtile" not in have:
            why = "the CPU does not list amx_tile"
        elif tiles is False:
            why = "the CPU lists amx_tile but the OS has not enabled AMX tile state"
        else:
            why = "AMX tile instructions crash where the OS or hypervisor has not enabled tile state for every thread"
        return f"the build has AMX compiled in ({listed}) and {why}", True
    if missing:
        return (
            f"the build uses {', '.join(missing)}, which this CPU does not list "
            f"(build features: {', '.join(built) or 'unknown'})",
            False,
        )
    if not built:
        return "llama.cpp's system info could not be read before the crash", False
    return (
        f"no instruction set of the build ({', '.join(built)}) is missing from this CPU's "
        "flags, so a portable build is the first thing to try",
        False,
    )


def rebuild_command(version: str | None, amx: bool) -> str:
    """The command that reinstalls llama-cpp-python ``version`` compiled for this machine:
    without AMX tile instructions when ``amx``, else as a portable build (GGML_NATIVE off)."""
    if amx:
        cmake = f"-DCMAKE_C_FLAGS='{AMX_FLAGS}' -DCMAKE_CXX_FLAGS='{AMX_FLAGS}'"
    else:
        cmake = "-DGGML_NATIVE=OFF"
    pinned = f"llama-cpp-python=={version}" if version else "llama-cpp-python"
    return (
        f'CMAKE_ARGS="{cmake}" pip install --no-cache-dir --force-reinstall '
        f"--no-binary llama-cpp-python '{pinned}'"
    )


def warn_without_gpu(gpu_layers: int | None, offload: bool | None) -> None:
    """Say once, on stderr, that ``gpu_layers`` has no effect: this llama.cpp build has no GPU
    backend (``offload`` is ``llama_supports_gpu_offload()``), so the model runs on the CPU."""
    if not gpu_layers or offload is not False or _warned_gpu:
        return
    _warned_gpu.append(True)
    sys.stderr.write(
        f"warning: model.gpu_layers is {gpu_layers} but this llama-cpp-python was built "
        "without a GPU backend, so the model runs on the CPU; rebuild it with "
        f"CMAKE_ARGS set to one of {GPU_BACKENDS} (docs/engine.md, GPU offload)\n"
    )
