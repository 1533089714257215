"""Write schemas/results.schema.json from skilleval/results/ (run by `make schema`; `make
schema-check` fails on drift)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from skilleval.results.schema import results_schema

TARGET = Path(__file__).resolve().parent.parent / "schemas" / "results.schema.json"


def render() -> str:
    return json.dumps(results_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = TARGET.read_text(encoding="utf-8") if TARGET.is_file() else ""
        if current != text:
            print(f"{TARGET} is out of date: run `make schema`", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
