"""Word-overlap scores against reference texts: BLEU, GLEU and ROUGE-N, as promptfoo computes them.

Each score is a number from 0 to 1 compared with ``threshold:``; the assertion passes when the
score reaches it. Tokenisation, clipping, smoothing and defaults follow promptfoo 0.123.1, so a
promptfoo config keeps its verdicts:

- ``bleu``: lower-cased whitespace tokens; clipped 1- to 4-gram precisions, each clipped
  against one reference at a time and the best reference kept; a zero precision counts as
  1e-7; orders the output is too short for are left out and the weights of the rest renormalised;
  brevity penalty against the reference length closest to the output's (the shorter on a tie).
  Default threshold 0.5.
- ``gleu``: the same tokens with trailing full stops removed; over 1- to 4-grams together,
  the smaller of precision and recall; the best reference counts. Default threshold 0.5.
- ``rouge-n``: unigram F1 over lower-cased Penn Treebank tokens, counts clipped. One
  reference. Default threshold 0.75.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

from skilleval.api import Check, Verdict, assertion

_REFERENCE: dict[str, Any] = {"type": "string"}
_REFERENCES: dict[str, Any] = {
    "oneOf": [
        _REFERENCE,
        {"type": "array", "items": _REFERENCE, "minItems": 1},
    ],
    "description": "the reference text, or a list of acceptable references",
}

BLEU_THRESHOLD = 0.5
GLEU_THRESHOLD = 0.5
ROUGE_THRESHOLD = 0.75
"""promptfoo's default thresholds."""

MAX_ORDER = 4
"""The longest n-grams BLEU and GLEU count."""

ZERO_PRECISION = 1e-7
"""What a zero n-gram precision counts as in BLEU's geometric mean (promptfoo's smoothing)."""

# JavaScript's \s and trim(), which promptfoo splits on; Python's differ in a few characters.
_JS_SPACE_CHARS = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_SPACES = re.compile(f"[{_JS_SPACE_CHARS}]+")


def _references(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _threshold(check: Check, default: float) -> float:
    return default if check.threshold is None else float(check.threshold)


def _ngrams(words: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def _clipped(candidate: Counter[tuple[str, ...]], reference: Counter[tuple[str, ...]]) -> int:
    return sum(min(count, reference[gram]) for gram, count in candidate.items())


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _against(refs: Sequence[str]) -> str:
    return "the reference" if len(refs) == 1 else f"the best of {len(refs)} references"


def _outcome(name: str, score: float, threshold: float, detail: str) -> Verdict:
    passed = score >= threshold
    relation = "≥" if passed else "<"
    return Verdict.of(
        passed,
        f"{name} {score:.4f} {relation} threshold {threshold:g} ({detail})",
        score=score,
    )


# --- BLEU -------------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    """``text`` lower-cased and split at whitespace, as promptfoo's BLEU does.

    Empty text gives one empty word, as JavaScript's ``split`` does.
    """
    return _SPACES.split(text.lower().strip(_JS_SPACE_CHARS))


def bleu(candidate: str, references: Sequence[str]) -> float:
    """BLEU of ``candidate`` against ``references`` (at least one), from 0 to 1."""
    if not candidate.strip(_JS_SPACE_CHARS):
        return 0.0
    cand = words(candidate)
    refs = [words(r) for r in references]
    closest = min((len(r) for r in refs), key=lambda size: (abs(size - len(cand)), size))
    logs: list[float] = []
    for n in range(1, MAX_ORDER + 1):
        grams = _ngrams(cand, n)
        total = len(cand) - n + 1
        if total <= 0:
            continue
        best = max(_clipped(grams, _ngrams(ref, n)) for ref in refs)
        precision = best / total
        logs.append(math.log(precision if precision > 0 else ZERO_PRECISION))
    penalty = 1.0 if len(cand) > closest else math.exp(1 - closest / len(cand))
    # Equal weights over the orders the candidate is long enough for.
    return penalty * math.exp(sum(logs) / len(logs))


@assertion("bleu", value=_REFERENCES)
def bleu_score(check: Check) -> Verdict:
    """BLEU of the output against the reference text(s) reaches `threshold` (default 0.5).

    The value is one reference or a list of them; the reason gives the score.
    """
    refs = _references(check.value)
    score = bleu(check.output, refs)
    threshold = _threshold(check, BLEU_THRESHOLD)
    detail = f"1- to 4-gram precision against {_against(refs)}"
    return _outcome("BLEU", score, threshold, detail)


# --- GLEU -------------------------------------------------------------------------------------


def gleu_words(text: str) -> list[str]:
    """Words as promptfoo's GLEU sees them: BLEU's words without trailing full stops.

    Text with no word left is empty.
    """
    found = [w.rstrip(".") for w in words(text)]
    return found if any(found) else []


def gleu(candidate: str, references: Sequence[str]) -> float:
    """GLEU of ``candidate`` against ``references`` (at least one), from 0 to 1."""
    cand = gleu_words(candidate)
    if not cand:
        return 0.0
    best = 0.0
    for reference in references:
        ref = gleu_words(reference)
        if ref == cand:
            return 1.0
        matches = cand_total = ref_total = 0
        for n in range(1, MAX_ORDER + 1):
            matches += _clipped(_ngrams(cand, n), _ngrams(ref, n))
            cand_total += max(len(cand) - n + 1, 0)
            ref_total += max(len(ref) - n + 1, 0)
        if cand_total and ref_total:
            best = max(best, min(matches / cand_total, matches / ref_total))
    return best


@assertion("gleu", value=_REFERENCES)
def gleu_score(check: Check) -> Verdict:
    """GLEU (Google BLEU) of the output against the reference text(s) reaches `threshold` (default 0.5).

    The value is one reference or a list of them; the reason gives the score.
    """
    refs = _references(check.value)
    score = gleu(check.output, refs)
    threshold = _threshold(check, GLEU_THRESHOLD)
    detail = f"the lower of 1- to 4-gram precision and recall against {_against(refs)}"
    return _outcome("GLEU", score, threshold, detail)


# --- ROUGE-N ----------------------------------------------------------------------------------

_WORDISH = r"[\w\u200c\u200d]"
_QUOTES = re.compile(r"``|''|\"")


@functools.cache
def _treebank_patterns() -> tuple[
    tuple[tuple[re.Pattern[str], str], ...],
    tuple[tuple[re.Pattern[str], str], ...],
    tuple[re.Pattern[str], ...],
]:
    """The tokenizer's splits, clitic endings and contractions, compiled on first use (a
    few milliseconds, which every suite load paid before)."""
    splits = (
        (re.compile(r"\.\.\."), " ... "),
        (re.compile(r"[:,](?!\d)"), r" \g<0> "),
        (re.compile(r"[;@#$%&]"), r" \g<0> "),
        (re.compile(r"([^.])(?<!\b[A-Za-z]\.[A-Za-z])(\.)([\])}>'\s]*)\Z"), r"\1 \2\3 "),
        (re.compile(r"[?!]"), r" \g<0> "),
        (re.compile(r"[\][(){}<>]"), r" \g<0> "),
        (re.compile(r"--"), " -- "),
    )
    endings = (
        (re.compile(r"([^'])' "), r"\1 ' "),
        (re.compile(r"'([sSmMdD]) "), r" '\1 "),
        (re.compile(r"('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r" \1 "),
    )
    contractions = tuple(
        re.compile(rf"(?<!{_WORDISH}){pattern}(?!{_WORDISH})", re.IGNORECASE)
        for pattern in (
            "(can)(not)",
            "(d)('ye)",
            "(gim)(me)",
            "(gon)(na)",
            "(got)(ta)",
            "(lem)(me)",
            "(more)('n)",
            "(wan)(na)(?= )",
            "('t)(is)",
            "('t)(was)",
        )
    )
    return splits, endings, contractions


def _category(char: str) -> str:
    return unicodedata.category(char) if char else ""


def _may_open(text: str, at: int, mark: str) -> bool:
    """Whether the quote ``mark`` at ``at`` can open a quotation, by what surrounds it."""
    before = text[at - 1] if at else ""
    if before and before in ".!?":
        return False
    end_or_start = at + len(mark) < len(text) or at == 0
    if not (end_or_start or before.isspace() or before == "<" or _category(before) == "Ps"):
        return False
    if not (
        at == 0
        or before.isspace()
        or before == "<"
        or _category(before).startswith("P")
        or text[max(at - 2, 0) : at] == "``"
    ):
        return False
    if mark == '"':
        return True
    following = text[at + 2 : at + 3]
    if not following or (
        _category(following)[0] not in "LN"
        and _category(following)
        not in (
            "Sc",
            "Ps",
        )
    ):
        return False
    later = _QUOTES.search(text, at + 2)
    return later is not None and later.group() == "''"


def _quote_marks(text: str) -> str:
    """Double quotes as Treebank's opening ```` `` ```` and closing ``''``, each spaced apart."""
    pieces: list[str] = []
    last = 0
    is_open = False
    for match in _QUOTES.finditer(text):
        at, mark = match.start(), match.group()
        is_open = mark == "``" or (not is_open and _may_open(text, at, mark))
        pieces.append(text[last:at])
        pieces.append(" `` " if is_open else " '' ")
        last = match.end()
    pieces.append(text[last:])
    return "".join(pieces)


def treebank_words(text: str) -> list[str]:
    """``text`` split into Penn Treebank tokens: punctuation and clitics apart from words."""
    flat = re.sub(f"[{_JS_SPACE_CHARS}\u0085]+", " ", text).strip(" ")
    if not flat:
        return []
    flat = _quote_marks(flat)
    splits, endings, contractions = _treebank_patterns()
    for pattern, replacement in splits:
        flat = pattern.sub(replacement, flat)
    flat = f" {flat} "
    for pattern, replacement in endings:
        flat = pattern.sub(replacement, flat)
    for pattern in contractions:
        flat = pattern.sub(lambda m: " " + " ".join(g for g in m.groups()) + " ", flat)
    return re.sub(" {2,}", " ", flat).strip(" ").split(" ")


def _f1(precision: float, recall: float) -> float:
    if precision == recall:
        return precision
    if precision == 0 or recall == 0:
        return 0.0
    high, low = max(precision, recall), min(precision, recall)
    return min(high, low * (2 / (1 + low / high)))


def rouge_n(candidate: str, reference: str) -> float:
    """ROUGE-1 F1 of ``candidate`` against ``reference``, both lower-cased, from 0 to 1."""
    cand = treebank_words(candidate.lower())
    ref = treebank_words(reference.lower())
    if not cand or not ref:
        return 0.0
    overlap = _clipped(_ngrams(cand, 1), _ngrams(ref, 1))
    if overlap == 0:
        return 0.0
    return _f1(overlap / len(cand), overlap / len(ref))


@assertion("rouge-n", value=_REFERENCE)
def rouge_n_score(check: Check) -> Verdict:
    """ROUGE-N (unigram F1) of the output against the reference text reaches `threshold` (default 0.75)."""
    score = rouge_n(check.output, check.value)
    threshold = _threshold(check, ROUGE_THRESHOLD)
    cand = len(treebank_words(check.output.lower()))
    ref = len(treebank_words(check.value.lower()))
    detail = (
        f"unigram F1, {_plural(cand, 'output token')} against {_plural(ref, 'reference token')}"
    )
    return _outcome("ROUGE-N", score, threshold, detail)
