"""Pin what promptfoo decides on the example configs in tests/data/promptfoo/.

For each folder there, writes ``echo.yaml`` (the config with ``providers: [echo]`` and
without the assertions that need a hosted grader or a priced, timed model) and
``promptfoo-verdicts.json`` (promptfoo's verdict for every assertion of every test). The
compatibility test runs skilleval on ``echo.yaml`` and compares.

promptfoo and a Node 22 runtime are installed from npm into a scratch folder (``--scratch``,
default ``/tmp/skilleval-promptfoo``) the first time; nothing is added to the project.

    python tools/promptfoo_verdicts.py [--scratch DIR] [FOLDER ...]

``--as-written CONFIG ...`` runs each config with its own providers instead (the user's
application: a Python file, a command, an HTTP endpoint) and writes ``promptfoo-verdicts.json``
for ``promptfooconfig.yaml`` and ``NAME-verdicts.json`` for ``NAME.yaml``, each row naming its
provider. When the folder has a ``server.py``, it is started on a free port of 127.0.0.1 and
``__PORT__`` in the folder's YAML files is replaced by that port.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "promptfoo"
PROMPTFOO = "promptfoo@0.123.1"
NODE = "node@22"

# Assertions echo cannot stand in for: a grader model, a price, a latency.
DROPPED = {
    "llm-rubric",
    "model-graded-closedqa",
    "model-graded-factuality",
    "factuality",
    "answer-relevance",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "g-eval",
    "select-best",
    "similar",
    "classifier",
    "moderation",
    "cost",
    "latency",
}

HEADER = (
    "# Written by tools/promptfoo_verdicts.py from promptfooconfig.yaml: the same config on\n"
    "# promptfoo's echo provider, without assertions that need a grader, a price or a clock.\n"
)


def install(scratch: Path) -> Path:
    """The promptfoo executable in ``scratch``, installed with its Node runtime if missing."""
    exe = scratch / "node_modules" / ".bin" / "promptfoo"
    if not exe.exists():
        scratch.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", PROMPTFOO, NODE],
            cwd=scratch,
            check=True,
        )
    return exe


def _kept(asserts: Any) -> Any:
    if not isinstance(asserts, list):
        return asserts
    return [
        a
        for a in asserts
        if not (isinstance(a, dict) and str(a.get("type", "")).removeprefix("not-") in DROPPED)
    ]


def echo_variant(config: dict[str, Any]) -> dict[str, Any]:
    out = dict(config)
    out.pop("targets", None)
    out["providers"] = ["echo"]
    default = out.get("defaultTest")
    if isinstance(default, dict) and "assert" in default:
        out["defaultTest"] = {**default, "assert": _kept(default["assert"])}
    tests = out.get("tests")
    if isinstance(tests, list):
        out["tests"] = [
            {**t, "assert": _kept(t["assert"])} if isinstance(t, dict) and "assert" in t else t
            for t in tests
        ]
    return out


def verdicts(result_doc: dict[str, Any], providers: bool = False) -> list[dict[str, Any]]:
    rows = []
    for r in result_doc["results"]["results"]:
        grading = r.get("gradingResult") or {}
        provider = r.get("provider") or {}
        rows.append(
            {
                **({"provider": provider.get("label") or provider.get("id")} if providers else {}),
                "prompt_index": r.get("promptIdx"),
                "test_index": r.get("testIdx"),
                "vars": r.get("vars"),
                "output": (r.get("response") or {}).get("output"),
                "asserts": [
                    {
                        "type": c["assertion"]["type"],
                        "value": c["assertion"].get("value"),
                        "pass": c["pass"],
                    }
                    for c in grading.get("componentResults") or []
                    if c.get("assertion")
                ],
                "pass": r.get("success"),
                # The first line only: the rest is a stack trace through promptfoo's files.
                "error": (r.get("error") or "").split("\n")[0] or None,
            }
        )
    rows.sort(key=lambda row: (row["test_index"], row["prompt_index"], row.get("provider") or ""))
    return rows


def pin(folder: Path, exe: Path) -> None:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 100
    config = yaml.load((folder / "promptfooconfig.yaml").read_text(encoding="utf-8"))
    with (folder / "echo.yaml").open("w", encoding="utf-8") as out:
        out.write(HEADER)
        yaml.dump(echo_variant(config), out)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / folder.name
        shutil.copytree(folder, work)
        env = {
            **os.environ,
            "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_CONFIG_DIR": str(Path(tmp) / "config"),
        }
        subprocess.run(
            [str(exe), "eval", "-c", "echo.yaml", "-o", "out.json", "--no-cache", "-j", "1"],
            cwd=work,
            env=env,
            check=False,
            stdout=subprocess.DEVNULL,
        )
        doc = json.loads((work / "out.json").read_text(encoding="utf-8"))
    pinned = {"promptfoo": PROMPTFOO, "results": verdicts(doc)}
    (folder / "promptfoo-verdicts.json").write_text(
        json.dumps(pinned, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"{folder.name}: {len(pinned['results'])} results")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pin_as_written(config: Path, exe: Path) -> None:
    """promptfoo's verdicts on ``config`` with its own providers."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / config.parent.name
        shutil.copytree(config.parent, work)
        server = None
        if (work / "server.py").exists():
            port = _free_port()
            for path in work.glob("*.yaml"):
                path.write_text(path.read_text(encoding="utf-8").replace("__PORT__", str(port)))
            server = subprocess.Popen([sys.executable, "server.py", str(port)], cwd=work)
            time.sleep(1.0)
        env = {
            **os.environ,
            "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_CONFIG_DIR": str(Path(tmp) / "config"),
        }
        try:
            subprocess.run(
                [str(exe), "eval", "-c", config.name, "-o", "out.json", "--no-cache", "-j", "1"],
                cwd=work,
                env=env,
                check=False,
                stdout=subprocess.DEVNULL,
            )
        finally:
            if server is not None:
                server.kill()
                server.wait()
        doc = json.loads((work / "out.json").read_text(encoding="utf-8"))
    pinned = {"promptfoo": PROMPTFOO, "results": verdicts(doc, providers=True)}
    name = (
        "promptfoo-verdicts.json"
        if config.stem == "promptfooconfig"
        else f"{config.stem}-verdicts.json"
    )
    (config.parent / name).write_text(
        json.dumps(pinned, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(f"{config}: {len(pinned['results'])} results")


def main(argv: list[str]) -> int:
    scratch = Path("/tmp/skilleval-promptfoo")
    if "--scratch" in argv:
        i = argv.index("--scratch")
        scratch = Path(argv[i + 1])
        del argv[i : i + 2]
    if "--as-written" in argv:
        argv.remove("--as-written")
        exe = install(scratch)
        for config in argv:
            pin_as_written(Path(config).resolve(), exe)
        return 0
    folders = [Path(a) for a in argv] or sorted(p for p in DATA.iterdir() if p.is_dir())
    exe = install(scratch)
    for folder in folders:
        pin(folder, exe)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
