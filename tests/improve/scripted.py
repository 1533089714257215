"""A scripted suite and candidate skills for the ``improve`` tests.

The scripted model's rules key on markers in the system prompt, so each candidate's effect
is written down, not measured: ``zq-format`` in a skill's instructions makes every
commit request pass, ``zq-break`` makes every reply fail, ``zq-route`` in a description
routes the commit requests to the skill.
"""

from __future__ import annotations

from pathlib import Path

CURRENT = """\
---
name: commit-message
description: Write a git commit message for a described change.
---

Write one commit message for the change.
"""

CANDIDATES = {
    "better": CURRENT.replace(
        "Write one commit message for the change.",
        "Write one commit message for the change. Start it with its type (zq-format).",
    ),
    "worse": CURRENT.replace(
        "Write one commit message for the change.",
        "Write one commit message for the change, then explain it at length (zq-break).",
    ),
    "neutral": CURRENT.replace(
        "Write one commit message for the change.",
        "Write a single commit message describing the change.",
    ),
    "leaky": CURRENT.replace(
        "Write one commit message for the change.",
        "Write one commit message for the change. For example: ledger rounding bug "
        "in the invoice exporter gets fix: (zq-format).",
    ),
    "echoing": CURRENT.replace(
        "Write one commit message for the change.",
        "Write one commit message for the change. Start it with its type (zq-format, zq-echo).",
    ),
    "renamed": CURRENT.replace("name: commit-message", "name: pip-cache").replace(
        "Write one commit message for the change.",
        "Write one commit message for the change. Start it with its type (zq-format).",
    ),
    "routes": CURRENT.replace(
        "description: Write a git commit message for a described change.",
        "description: Write a git commit message for a described change (zq-route).",
    ),
}

SUBJECTS = [
    "ledger rounding bug in the invoice exporter",
    "dark mode toggle on the settings page",
    "typo in the readme",
    "renamed utils module",
    "slow orders query",
    "dropped python 3.8",
    "flaky network test",
    "the pip-cache step in ci",
    "empty csv rows crash",
    "login redirect loop",
    "missing translations",
    "memory leak in the watcher",
    "timezone parsing",
    "retry on http 503",
    "docker image size",
    "lint warnings",
    "broken link in docs",
    "upgrade of the yaml parser",
    "race in the job queue",
    "config file permissions",
    "progress bar flicker",
    "unicode file names",
    "stale lock files",
    "default port change",
]

NEGATIVES = [
    "What is the capital of Australia?",
    "Write a two-line poem about autumn.",
    "What is 17 plus 25?",
    "Name three primary colours.",
    "How many legs does a spider have?",
    "Translate hello into French.",
]


def _overfit_reply(label: str, holistic: float) -> str:
    """The overfitting judge's reply labelling both of the suite's distinct assertions alike."""
    items = ", ".join(f'{{"index": {i}, "reasoning": "x", "label": "{label}"}}' for i in (1, 2))
    text = f'{{"assertions": [{items}], "holistic_reasoning": "x", "holistic": {holistic}}}'
    return "'" + text + "'"


def suite_text(delay_ms: int = 0, hard: int = 0) -> str:
    lines = [
        "version: 1",
        "skill: skill/SKILL.md",
        "model:",
        "  provider: scripted",
        "  responses:",
        # The overfitting judge: a skill marked zq-echo makes every assertion narrow.
        f'    - {{arm: "", match: "(?s)You review the test suite.*zq-echo", '
        f"output: {_overfit_reply('narrow', 1)}}}",
        f'    - {{arm: "", match: "You review the test suite", '
        f"output: {_overfit_reply('broad', 0)}}}",
        '    - {arm: router, match: "(?s)zq-route.*CHANGE", output: commit-message}',
        '    - {arm: on, match: "zq-break", output: "whatever you like"}',
        '    - {arm: on, match: "(?s)zq-format.*CHANGE", output: "fix: apply the change"}',
        "  default: Sure! Here is a message about it.",
    ]
    if delay_ms:
        lines += ["evaluateOptions:", f"  delay: {delay_ms}"]
    lines += ["tests:"]
    for i, subject in enumerate(SUBJECTS):
        lines += [
            f"  - id: c{i:02d}",
            "    should_trigger: true",
            f'    prompt: "Commit message for this CHANGE: {subject}."',
            *(["    metadata: {tags: [hard]}"] if i < hard else []),
            "    assert:",
            "      - {type: regex, value: '^fix: '}",
        ]
    for i, question in enumerate(NEGATIVES):
        lines += [
            f"  - id: n{i:02d}",
            "    should_trigger: false",
            f'    prompt: "{question}"',
            "    assert:",
            "      - {type: icontains, value: sure}",
        ]
    return "\n".join(lines) + "\n"


def make(
    root: Path, candidates: list[str], *, delay_ms: int = 0, hard: int = 0
) -> tuple[Path, Path]:
    """Write the suite, its skill and the named candidates; return (suite, candidates dir)."""
    (root / "skill").mkdir(parents=True, exist_ok=True)
    (root / "skill" / "SKILL.md").write_text(CURRENT, encoding="utf-8")
    suite = root / "suite.yaml"
    suite.write_text(suite_text(delay_ms, hard), encoding="utf-8")
    folder = root / "candidates"
    for name in candidates:
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "SKILL.md").write_text(CANDIDATES[name], encoding="utf-8")
    return suite, folder
