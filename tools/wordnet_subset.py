"""Write the few WordNet lines a set of meteor cases looks up, as a WordNet folder of its own.

For each output word of the cases (metadata ``output`` of a promptfoo config), lower-cased
and as its Porter stem, the index lines naming it and the data lines of their synsets are
copied unchanged from a full WordNet database, each file keeping the database's licence at
its top. skilleval's reader finds a synset by the offset at the start of its line, so the
subset reads as the full database does for these words.

    python tools/wordnet_subset.py WORDNET_DICT CONFIG OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from ruamel.yaml import YAML

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from skilleval.assertions.builtin._porter import stem
from skilleval.assertions.builtin.meteor import words

PARTS = ("noun", "verb", "adj", "adv")


def looked_up(config: Path) -> set[str]:
    data = YAML(typ="safe", pure=True).load(config.read_text(encoding="utf-8"))
    found: set[str] = set()
    for test in data["tests"]:
        for word in words(str((test.get("metadata") or {}).get("output", ""))):
            found.update({word.lower(), stem(word)})
    return found


def main(argv: list[str]) -> int:
    source, config, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    wanted = looked_up(config)
    out.mkdir(parents=True, exist_ok=True)
    for part in PARTS:
        index_lines = (source / f"index.{part}").read_text(encoding="utf-8").splitlines()
        licence = [line for line in index_lines if line.startswith("  ")]
        kept = [line for line in index_lines if line.split(" ", 1)[0] in wanted]
        offsets: set[int] = set()
        for line in kept:
            fields = line.split()
            count, pointers = int(fields[2]), int(fields[3])
            offsets.update(int(f) for f in fields[6 + pointers : 6 + pointers + count])
        (out / f"index.{part}").write_text("\n".join([*licence, *kept]) + "\n", encoding="utf-8")
        data_lines = (source / f"data.{part}").read_text(encoding="utf-8").splitlines()
        synsets = [
            line
            for line in data_lines
            if not line.startswith("  ") and int(line.split(" ", 1)[0]) in offsets
        ]
        (out / f"data.{part}").write_text("\n".join([*licence, *synsets]) + "\n", encoding="utf-8")
        print(f"{part}: {len(kept)} index lines, {len(synsets)} synsets")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
