"""Grade assertion cases with promptfoo and with skilleval, and report where they agree.

The cases are a promptfoo config with one prompt (``{{ out }}`` on the ``echo`` provider, so
each test's output is its ``out`` var) and any assertions. promptfoo runs it (installed as
``tools/promptfoo_verdicts.py`` installs it), skilleval runs the same file, and each
assertion's verdict is compared: pass, fail, or error (promptfoo's thrown errors, and
skilleval's ``error`` status or a load that refuses the assertion).

    python tools/promptfoo_agreement.py CASES.yaml [--scratch DIR] [--json OUT]

Prints one line per disagreement and the totals by type. Not shipped; a measurement aid.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from promptfoo_verdicts import install, verdicts
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent


def promptfoo_side(config: Path, exe: Path, work: Path) -> list[list[str]]:
    """promptfoo's verdict for each assertion of each test, in order."""
    env = {
        **os.environ,
        "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(work / "config"),
    }
    subprocess.run(
        [str(exe), "eval", "-c", config.name, "-o", "out.json", "--no-cache", "-j", "1"],
        cwd=work,
        env=env,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows = verdicts(json.loads((work / "out.json").read_text(encoding="utf-8")))
    out = []
    for row in rows:
        statuses = ["pass" if a["pass"] else "fail" for a in row["asserts"]]
        if not statuses and row["error"]:
            statuses = ["error"]
        out.append(statuses)
    return out


def skilleval_side(config: Path, work: Path, count: int) -> tuple[list[list[str]], str]:
    """skilleval's status for each assertion of each test, and what refused a load."""
    env = {**os.environ, "SKILLEVAL_HOME": str(work / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "skilleval", "run", config.name, "--json", "--no-cache", "-q"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        records = json.loads(done.stdout)["records"]
    except (ValueError, KeyError):
        return [["error"]] * count, done.stderr.strip().splitlines()[0] if done.stderr else ""
    by_id: dict[str, list[str]] = {
        r["test_id"]: [a["status"] for a in r["asserts"]] for r in records
    }
    ids = [r["test_id"] for r in records]
    return [by_id[i] for i in ids], ""


def main(argv: list[str]) -> int:
    scratch = Path("/tmp/skilleval-promptfoo")
    out_json: Path | None = None
    if "--scratch" in argv:
        i = argv.index("--scratch")
        scratch = Path(argv[i + 1])
        del argv[i : i + 2]
    if "--json" in argv:
        i = argv.index("--json")
        out_json = Path(argv[i + 1])
        del argv[i : i + 2]
    cases = Path(argv[0]).resolve()
    exe = install(scratch)
    data = YAML(typ="safe", pure=True).load(cases.read_text(encoding="utf-8"))
    tests: list[dict[str, Any]] = data["tests"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copy(cases, work / "promptfooconfig.yaml")
        theirs = promptfoo_side(work / "promptfooconfig.yaml", exe, work)
        ours, refused = skilleval_side(work / "promptfooconfig.yaml", work, len(tests))
    if refused:
        print(f"skilleval refused the cases: {refused}")
    totals: Counter[str] = Counter()
    agree: Counter[str] = Counter()
    rows = []
    for index, test in enumerate(tests):
        asserts = test.get("assert") or []
        mine = ours[index] if index < len(ours) else []
        other = theirs[index] if index < len(theirs) else []
        for j, entry in enumerate(asserts):
            kind = str(entry.get("type"))
            a = mine[j] if j < len(mine) else "missing"
            b = other[j] if j < len(other) else (other[0] if other == ["error"] else "missing")
            totals[kind] += 1
            same = a == b
            agree[kind] += same
            rows.append(
                {"test": index, "type": kind, "skilleval": a, "promptfoo": b, "agree": same}
            )
            if not same:
                label = test.get("description") or test.get("vars", {}).get("out", "")
                print(f"test {index} {kind}: skilleval {a}, promptfoo {b}  ({str(label)[:60]})")
    print()
    for kind in sorted(totals):
        print(f"{kind:32} {agree[kind]:3}/{totals[kind]:<3}")
    total, same = sum(totals.values()), sum(agree.values())
    print(f"{'all':32} {same:3}/{total:<3} ({100 * same / max(total, 1):.0f}%)")
    if out_json is not None:
        out_json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
