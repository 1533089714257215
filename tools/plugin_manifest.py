"""Write skilleval/plugins/builtins.json, the manifest of the built-in registrations (run by
`make schema`; `make schema-check` fails on drift).

Each entry is what scanning the built-in modules registers, in the same order, without the
functions: the manager registers the built-ins from it and imports a module only when one of
its registrations is looked up.
"""

from __future__ import annotations

import json
import sys

from skilleval.plugins.builtins import MANIFEST
from skilleval.plugins.manager import manifest_entries


def render() -> str:
    """One entry a line, so that a change shows as the lines of the entries it changes."""
    lines = [json.dumps(entry, ensure_ascii=False) for entry in manifest_entries()]
    return "[\n" + ",\n".join(lines) + "\n]\n"


if __name__ == "__main__":
    text = render()
    if sys.argv[1:] == ["--check"]:
        if MANIFEST.read_text(encoding="utf-8") != text:
            print("skilleval/plugins/builtins.json is stale: run `make schema`", file=sys.stderr)
            sys.exit(1)
    else:
        MANIFEST.write_text(text, encoding="utf-8")
