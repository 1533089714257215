"""The one module that reaches inside llama-cpp-python (engine/llama_adapter.py): nothing else
touches the library's private parts, the declared version range is the adapter's, and an
installed library that lacks what the engine uses is refused in one line."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from skilleval.engine import llama_adapter
from skilleval.engine.llama_adapter import (
    MEMO_FILE,
    SUPPORTED,
    TESTED,
    check_installed,
    require_supported,
)
from skilleval.errors import ProviderError

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = ROOT / "skilleval" / "engine" / "llama_adapter.py"

KNOWN_PRIVATE = {
    "_ctx",
    "_model",
    "_grammar",
    "_root",
    "_internals",
    "_input_ids",
    "_scores",
    "_batch",
    "_requires_eval",
    "_stack",
    "_n_ctx",
    "_n_vocab",
    "_sampler",
    "_exit_stack",
}
"""Private names of llama-cpp-python 0.3.x the engine has used or could be tempted to; the
installed library's own are added below."""


def library_private_names() -> set[str]:
    """Every private attribute, method and module name the installed llama-cpp-python
    defines (``self._x = …``, ``def _x``, ``_x.py``), and :data:`KNOWN_PRIVATE`."""
    names = set(KNOWN_PRIVATE)
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return names
    for path in Path(spec.origin).parent.rglob("*.py"):
        if path.stem.startswith("_") and not path.stem.startswith("__"):
            names.add(path.stem)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                names.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def private_uses(source: str, private: set[str]) -> list[str]:
    """Where ``source`` reaches a private part of llama-cpp-python: a private module
    imported from ``llama_cpp``, or a private name read off anything but ``self`` or ``cls``
    (directly, or through ``getattr``/``hasattr``/``setattr`` with the name as a literal)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "llama_cpp":
            parts = [*(node.module or "").split("."), *(a.name for a in node.names)]
            found += [f"{node.lineno}: import {p}" for p in parts if p.startswith("_")]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "llama_cpp" and any(p.startswith("_") for p in parts):
                    found.append(f"{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.Attribute) and node.attr in private:
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in private
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_scan_finds_the_ways_in_that_the_engine_once_used() -> None:
    private = library_private_names()
    assert {"_ctx", "_model", "_grammar", "_root", "_internals"} <= private
    old = (
        "from llama_cpp import _internals\n"
        "import llama_cpp._internals\n"
        "llm._ctx.kv_cache_clear()\n"
        "vocab = self.llm._model.vocab\n"
        "text = grammar._grammar.encode('utf-8')\n"
        "ok = hasattr(llm, '_requires_eval')\n"
    )
    assert len(private_uses(old, private)) == 6
    # The engine's own private attributes are its own business.
    assert private_uses("self._grammar = None\nqueue._head()\n", private) == []


def test_no_module_but_the_adapter_touches_llama_cpp_python_s_private_parts() -> None:
    private = library_private_names()
    # The package, and the benchmark and tools beside it, which drive llama-cpp-python too.
    sources = [p for part in ("skilleval", "bench", "tools") for p in (ROOT / part).rglob("*.py")]
    assert len(sources) > 200
    found = {
        str(path.relative_to(ROOT)): uses
        for path in sorted(sources)
        if path != ADAPTER and (uses := private_uses(path.read_text(encoding="utf-8"), private))
    }
    assert found == {}, "move these into skilleval/engine/llama_adapter.py"
    assert private_uses(ADAPTER.read_text(encoding="utf-8"), private)  # the one place


def test_the_llama_extra_declares_the_adapter_s_range_and_dev_pins_the_tested_version() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f'"llama-cpp-python{SUPPORTED}"' in pyproject
    assert f'"llama-cpp-python[server]=={TESTED}"' in pyproject
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(rf"^LLAMA_CPP_VERSION\s*:=\s*{re.escape(TESTED)}$", makefile, re.M)
    low, high = re.fullmatch(r">=([\d.]+),<([\d.]+)", SUPPORTED).groups()  # type: ignore[union-attr]

    def version(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split("."))

    # The upper bound is the release after the tested one: the tested one is inside.
    assert version(low) <= version(TESTED) < version(high)
    assert version(high)[:2] == version(TESTED)[:2]
    assert version(high)[2] == version(TESTED)[2] + 1


def test_the_installed_library_has_everything_the_engine_uses() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    assert llama_adapter.missing_api() == ()
    require_supported()


def test_what_is_missing_is_one_line_naming_the_supported_range(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    gone = ("llama_get_memory", "llama_memory_seq_rm", "llama_memory_seq_cp", "llama_free")
    monkeypatch.setattr(llama_adapter, "missing_api", lambda: gone)
    with pytest.raises(ProviderError) as caught:
        require_supported()
    message = str(caught.value)
    assert "\n" not in message
    assert "lacks llama_get_memory, llama_memory_seq_rm, llama_memory_seq_cp and 1 more;" in message
    assert f"supports llama-cpp-python{SUPPORTED}" in message
    monkeypatch.setattr(llama_adapter, "missing_api", lambda: ())

    class OldLlama:
        """A loaded model of a release that evaluates the last prompt token again."""

    with pytest.raises(ProviderError, match=r"lacks Llama\._requires_eval .*>=0\.3\.32"):
        require_supported(OldLlama())


def test_the_verdict_is_remembered_per_installed_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    looked: list[str] = []

    def lacking() -> tuple[str, ...]:
        looked.append("once")
        return ("llama_get_memory",)

    monkeypatch.setattr(llama_adapter, "missing_api", lacking)
    for _ in range(2):
        with pytest.raises(ProviderError, match="lacks llama_get_memory;"):
            check_installed(tmp_path)
    assert looked == ["once"]
    assert (tmp_path / MEMO_FILE).is_file()
    # Other files (an upgrade, another environment) are looked at afresh.
    monkeypatch.setattr(llama_adapter, "_fingerprint", lambda: "another library")
    monkeypatch.setattr(llama_adapter, "missing_api", lambda: ())
    check_installed(tmp_path)


def test_a_remembered_verdict_does_not_import_the_library(tmp_path: Path) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    script = (
        "import sys; from pathlib import Path\n"
        "from skilleval.engine.llama_adapter import check_installed\n"
        "check_installed(Path(sys.argv[1]))\n"
        "print('llama_cpp' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    imported = [
        subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=120,
        ).stdout.strip()
        for _ in range(2)
    ]
    assert imported == ["True", "False"]


def fake_old_library(folder: Path, *, drop: str, version: str) -> Path:
    """A copy of the installed llama-cpp-python (its files linked, its shared library
    shared) whose bindings lack ``drop`` and whose version says ``version``."""
    spec = importlib.util.find_spec("llama_cpp")
    assert spec is not None
    assert spec.origin is not None
    real = Path(spec.origin).parent
    fake = folder / "llama_cpp"
    fake.mkdir(parents=True)
    for entry in real.iterdir():
        if entry.name not in ("__init__.py", "llama_cpp.py", "__pycache__"):
            (fake / entry.name).symlink_to(entry)
    bindings = (real / "llama_cpp.py").read_text(encoding="utf-8")
    (fake / "llama_cpp.py").write_text(f"{bindings}\ndel {drop}\n", encoding="utf-8")
    init = (real / "__init__.py").read_text(encoding="utf-8")
    init = re.sub(r'__version__ = "[^"]*"', f'__version__ = "{version}"', init)
    (fake / "__init__.py").write_text(init, encoding="utf-8")
    return folder


def test_a_run_on_a_library_without_a_binding_stops_at_the_model_line_in_one_line(
    tmp_path: Path,
) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed")
    site = fake_old_library(tmp_path / "site", drop="llama_get_memory", version="0.3.9")
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + b"\0" * 96)
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "version: 1\nmodel:\n  path: m.gguf\n"
        "tests:\n  - id: one\n    prompt: hi\n    assert: [{type: contains, value: hi}]\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "skilleval", "run", suite.name],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 4, proc.stderr
    assert "Traceback" not in proc.stderr
    # The diagnostic at the model line, then the count every failed load ends with.
    assert proc.stderr.strip().splitlines() == [
        "suite.yaml:2:1: error: llama-cpp-python 0.3.9 lacks llama_get_memory; skilleval "
        f"supports llama-cpp-python{SUPPORTED}: pip install 'llama-cpp-python{SUPPORTED}'",
        "1 error",
    ]
    assert proc.stdout == ""
