"""The near-duplicate search finds exactly what comparing every pair would find."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from skilleval.cases.overlap import WordIndex
from skilleval.lint.design import NEAR_DUPLICATE
from skilleval.lint.ngrams import similarity, words


def _brute(prompts: list[str], query: str) -> tuple[str, float] | None:
    best: tuple[str, float] | None = None
    seq = words(query)
    for i, text in enumerate(prompts):
        score = similarity(seq, words(text))
        if score >= NEAR_DUPLICATE and (best is None or score > best[1]):
            best = (f"p{i}", score)
    return best


@pytest.mark.parametrize("seed", range(4))
def test_prefix_filtering_misses_no_near_duplicate(seed: int) -> None:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(40)]
    prompts = [" ".join(rng.choices(vocab, k=rng.randint(3, 14))) for _ in range(150)]
    # Near copies, not in the index: a word dropped, added or changed, so that many pairs
    # sit around 0.9, on both sides of it.
    queries = []
    for text in prompts[:80]:
        seq = text.split()
        i = rng.randrange(len(seq))
        edit = rng.choice(["drop", "add", "swap"])
        if edit == "drop" and len(seq) > 1:
            seq.pop(i)
        elif edit == "add":
            seq.insert(i, rng.choice(vocab))
        else:
            seq[i] = rng.choice(vocab)
        queries.append(" ".join(seq))
    queries += [" ".join(rng.choices(vocab, k=10)) for _ in range(20)]
    rarity: Counter[str] = Counter()
    for text in prompts + queries:
        rarity.update(set(words(text)))
    index = WordIndex(rarity)
    for i, text in enumerate(prompts):
        index.add(f"p{i}", f"source{i}", text)
    found = 0
    for query in queries:
        expected = _brute(prompts, query)
        got = index.nearest(query, "another source")
        if expected is not None and expected[1] >= 1.0:
            assert got is not None
            assert got[1] == 1.0
        else:
            assert got == expected, query
        found += got is not None
    assert 10 < found < len(queries)  # real near-duplicates on both sides of the line
