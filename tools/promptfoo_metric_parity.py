"""Compare skilleval's promptfoo-compatible checks with promptfoo's own code on random inputs.

Reads the functions behind promptfoo's ``bleu``, ``gleu``, ``rouge-n``, ``is-xml``,
``contains-xml``, ``is-html`` and ``contains-html`` from an installed promptfoo (see
``tools/promptfoo_verdicts.py`` for the install), runs them under its Node on generated
inputs, and reports every input where skilleval's score or verdict differs. Nothing from
promptfoo is kept: the functions are read into a temporary script for the run.

    python tools/promptfoo_metric_parity.py [--scratch DIR] [--cases N] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from skilleval.api import Check  # noqa: E402
from skilleval.assertions.builtin.html_checks import html_problem, html_signs  # noqa: E402
from skilleval.assertions.builtin.textmetrics import bleu, gleu, rouge_n  # noqa: E402
from skilleval.assertions.builtin.xml_checks import contains_xml, is_xml  # noqa: E402

WORDS = [
    "the",
    "The",
    "cat",
    "cat.",
    "sat",
    "on",
    "mat",
    "a",
    "A",
    "dog",
    "dog.",
    "...",
    "don't",
    "I'm",
    "can't",
    "cannot",
    '"hi"',
    "'tis",
    "yes!",
    "no?",
    "(x)",
    "$5",
    "3,000",
    "e.g.",
    "U.S.",
    "--",
    "gonna",
    "wanna",
    "it's",
    "o'clock",
    "’",
    "‘quote’",
    "«x»",
    "&",
    "#tag",
    "x:y",
    "1.5",
    ".",
    ",",
    ";",
]
SPACES = (" ", "  ", "\n", "\t", " \u00a0")
HTML_PIECES = (
    "<p>", "</p>", "<b>", "</b>", "text", " ", "<div class='x'>", "</div>", "<foo>", "</foo>",
    "<my-el>", "</my-el>", "<br/>", '<img src="a.png">', "&amp;", "&nbsp;", "<!-- c -->",
    "<table>", "</table>", "<tr>", "<td>", "</td>", "<html>", "</html>", "<body>", "</body>",
    "<head>", "<title>", "</title>", "</head>", "<!DOCTYPE html>", '<?xml version="1.0"?>',
    "<svg>", "</svg>", "<circle/>", "<script>", "</script>", "a < b", "c > d", "\n", "<li>",
    "<ul>", "</ul>", "<noscript>", "<select>", "<option>", "<textarea>", "'<body>'", "<h1>",
)  # fmt: skip
XML_PIECES = (
    "<a>", "</a>", "<b>", "</b>", "<c/>", "<c x='1'/>", '<item id="7">', "</item>", "text", " ",
    "&amp;", "&", "&x;", "&#65;", '<?xml version="1.0"?>', "<!-- c -->", "<![CDATA[<z>]]>",
    "<ns:a>", "</ns:a>", '<r xmlns:ns="u">', "</r>", "<!DOCTYPE r>",
    '<!DOCTYPE r [<!ENTITY e "v">]>', "1 < 2", "x > y", "<d flag>", "</d>", "\n", "<a b='<'>",
    "<1a>", "</A>", "<A>",
)  # fmt: skip
XML_PATHS: tuple[Any, ...] = (
    None, "a", "a.b", "a.c", "item.@_id", "a.0", "a.1", "r.ns:a", "b", "a.#text", ["a", "b"],
    "a, b", {"requiredElements": ["c"]},
)  # fmt: skip

DRIVER = """
const fs = require("fs");
const rouge = require(%(rouge)s);
const { parse: parse$1 } = require(%(parse5)s);
const { SaxesParser } = require(%(saxes)s);
const { XMLParser } = require(%(fxp)s);
%(source)s
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const paths = (v) => typeof v === "string" ? v.split(",").map((e) => e.trim())
  : Array.isArray(v) && v.length > 0 ? v.map(String)
  : v && typeof v === "object" ? v.requiredElements.map(String) : undefined;
const out = {
  metrics: cases.metrics.map(([c, refs]) => [calculateBleuScore(c, refs),
    calculateGleuScore(c, refs), rougeNScore(c.toLowerCase(), refs[0].toLowerCase())]),
  html: cases.html.map((t) => [validateHtml(t).isValid, containsHtml(t)]),
  xml: cases.xml.map(([t, v]) => [validateXml(t, paths(v)).isValid,
    containsXml(t, paths(v)).isValid]),
};
process.stdout.write(JSON.stringify(out));
"""


def _function(source: str, name: str) -> str:
    start = source.index(f"\nfunction {name}(") + 1
    end = source.index("\n}\n", start) + 3
    return source[start:end]


def _region(source: str, start_marker: str, end_marker: str) -> str:
    start = source.index(start_marker)
    return source[start : source.index(end_marker, start)]


def promptfoo_source(package: Path) -> str:
    """The functions behind the checks, read from promptfoo's compiled evaluator."""
    evaluator = next(
        p
        for p in sorted((package / "dist" / "src").glob("evaluator-*.js"))
        if "function calculateBleuScore(" in p.read_text(encoding="utf-8")
    )
    text = evaluator.read_text(encoding="utf-8")
    names = (
        "getNGrams", "calculateBrevityPenalty", "tokenize", "countNGrams$1",
        "calculateBleuScore", "tokenizeForGleu", "calculateGleuScore", "countNGrams",
        "rougeNScore",
    )  # fmt: skip
    parts = [_function(text, n) for n in names]
    parts.append(_region(text, "//#region src/assertions/html.ts", "const handleContainsHtml"))
    parts.append(_region(text, "//#region src/assertions/xml.ts", "const handleIsXml"))
    return "\n".join(parts)


def _text(rng: random.Random) -> str:
    count = rng.choice([0, 1, 1, 2, 3, 4, 5, 6, 8, 12])
    return "".join(rng.choice(WORDS) + rng.choice(SPACES) for _ in range(count))


def _markup(rng: random.Random, pieces: tuple[str, ...]) -> str:
    return "".join(rng.choice(pieces) for _ in range(rng.choice([1, 2, 3, 4, 6, 8])))


def generate(count: int, seed: int) -> dict[str, list[Any]]:
    rng = random.Random(seed)
    metrics = []
    for _ in range(count):
        candidate = _text(rng)
        refs = [_text(rng) for _ in range(rng.choice([1, 1, 2, 3]))]
        if rng.random() < 0.15:
            refs[0] = candidate
        metrics.append([candidate, refs])
    return {
        "metrics": metrics,
        "html": [_markup(rng, HTML_PIECES) for _ in range(count)],
        "xml": [[_markup(rng, XML_PIECES), rng.choice(XML_PATHS)] for _ in range(count)],
    }


def ours(cases: dict[str, list[Any]]) -> dict[str, list[Any]]:
    def xml(text: str, value: Any) -> list[bool]:
        check = Check(output=text, value=value)
        return [is_xml(check).passed, contains_xml(check).passed]

    return {
        "metrics": [[bleu(c, r), gleu(c, r), rouge_n(c, r[0])] for c, r in cases["metrics"]],
        "html": [[html_problem(t) is None, html_signs(t)[0] >= 2] for t in cases["html"]],
        "xml": [xml(t, v) for t, v in cases["xml"]],
    }


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return bool(a == b)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/skilleval-promptfoo"))
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    modules = args.scratch / "node_modules"
    node = modules / ".bin" / "node"
    requires = {
        "rouge": modules / "js-rouge" / "dist" / "rouge.js",
        "parse5": modules / "parse5",
        "saxes": modules / "saxes",
        "fxp": modules / "fast-xml-parser",
    }
    cases = generate(args.cases, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "driver.cjs"
        script.write_text(
            DRIVER
            % {
                "source": promptfoo_source(modules / "promptfoo"),
                **{k: json.dumps(str(v)) for k, v in requires.items()},
            },
            encoding="utf-8",
        )
        run = subprocess.run(
            [str(node), str(script)],
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            check=True,
        )
    theirs = json.loads(run.stdout)
    mine = ours(cases)
    labels: dict[str, tuple[str, ...]] = {
        "metrics": ("bleu", "gleu", "rouge-n"),
        "html": ("is-html", "contains-html"),
        "xml": ("is-xml", "contains-xml"),
    }
    differ = 0
    show: Callable[[Any], str] = lambda v: json.dumps(v, ensure_ascii=False)  # noqa: E731
    for family, names in labels.items():
        for case, a, b in zip(cases[family], mine[family], theirs[family], strict=True):
            for name, x, y in zip(names, a, b, strict=True):
                if not _same(x, y):
                    differ += 1
                    print(f"{name}: {show(case)}: skilleval {x}, promptfoo {y}")
    total = sum(len(cases[f]) * len(n) for f, n in labels.items())
    print(f"{total - differ} of {total} agree")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
