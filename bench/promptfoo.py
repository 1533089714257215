"""promptfoo for the comparisons: installed from npm into a scratch folder when asked.

``npm install promptfoo@0.123.1 node@22`` puts promptfoo and a Node 22 runtime (the
``node@22`` package brings the binary) in ``<folder>/node_modules``. promptfoo's launcher runs
``node`` from the PATH, so every promptfoo child gets ``<folder>/node_modules/.bin`` first on
its PATH, whatever Node the machine has. Nothing outside the folder is touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

VERSION = "0.123.1"
NODE = "22"


def install(folder: Path) -> Path:
    """promptfoo's binary in ``folder``, installed by npm unless that version is there."""
    binary = folder / "node_modules" / ".bin" / "promptfoo"
    installed = folder / "node_modules" / "promptfoo" / "package.json"
    if (
        binary.is_file()
        and installed.is_file()
        and json.loads(installed.read_text(encoding="utf-8")).get("version") == VERSION
    ):
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("--install-promptfoo needs npm on the PATH")
    folder.mkdir(parents=True, exist_ok=True)
    manifest = folder / "package.json"
    if not manifest.is_file():
        manifest.write_text('{"name": "bench-promptfoo", "private": true}\n', encoding="utf-8")
    print(f"installing promptfoo@{VERSION} and node@{NODE} into {folder} …", flush=True)
    subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", f"promptfoo@{VERSION}", f"node@{NODE}"],
        cwd=folder,
        check=True,
    )
    return binary


def environment(binary: str, scratch: Path) -> dict[str, str]:
    """What a promptfoo child needs: its own Node first on the PATH, no telemetry, no update
    check, and its database and cache in ``scratch``."""
    bin_dir = str(Path(binary).absolute().parent)
    node = Path(bin_dir) / "node"
    path = os.environ.get("PATH", "")
    return {
        "PATH": f"{bin_dir}{os.pathsep}{path}" if node.exists() else path,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(scratch / "promptfoo-home"),
        "PROMPTFOO_CACHE_PATH": str(scratch / "promptfoo-cache"),
    }


def node_version(binary: str) -> str:
    node = Path(binary).absolute().parent / "node"
    command = [str(node)] if node.exists() else ["node"]
    done = subprocess.run([*command, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"
