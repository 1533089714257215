"""Write schemas/suite.schema.json (run by `make schema`; `make schema-check` fails on drift).

The schema is built from the built-in plugins only (no entry points, no plugin folders), so
the file does not depend on what happens to be installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from skilleval.plugins.registry import default_registry
from skilleval.suite.suite_schema import render

if __name__ == "__main__":
    out = Path(__file__).resolve().parent.parent / "schemas" / "suite.schema.json"
    text = render(default_registry(entry_points=False))
    if sys.argv[1:] == ["--check"]:
        if out.read_text(encoding="utf-8") != text:
            print("schemas/suite.schema.json is stale: run `make schema`", file=sys.stderr)
            sys.exit(1)
    else:
        out.write_text(text, encoding="utf-8")
