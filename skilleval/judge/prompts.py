"""Judge prompts: the packaged jinja2 templates, and a suite's ``rubricPrompt`` override.

The packaged templates live in ``skilleval/judge/templates/``. Each judge template defines a
``system`` block and a ``user`` block; the instructions and the rubric (or statements) are
in the system message and the output is last, so calls that share a rubric share a prompt
prefix. ``docs/judge.md`` documents the variables.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from skilleval.errors import PromptProblem
from skilleval.judge.leak import WORKED_EXAMPLE

if TYPE_CHECKING:
    import jinja2

ROLES: Final = ("system", "user", "assistant")


@functools.cache
def _env() -> jinja2.Environment:
    import jinja2  # lazy: start-up time

    from skilleval.util.jinjacache import HomeBytecodeCache

    return jinja2.Environment(
        loader=jinja2.PackageLoader("skilleval.judge", "templates"),
        bytecode_cache=HomeBytecodeCache("judge"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def _blocks(name: str, variables: Mapping[str, Any]) -> list[dict[str, str]]:
    template = _env().get_template(name)
    context = template.new_context(dict(variables))
    return [
        {"role": role, "content": "".join(template.blocks[role](context)).strip()}
        for role in ("system", "user")
    ]


def numbered(items: Sequence[str]) -> str:
    """Rubric items as the numbered lines the judge sees (``1. …``)."""
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, start=1))


def rubric_variables(
    *,
    output: str,
    rubric: str | Sequence[str],
    prompt: str,
    reference: str,
    vars_: Mapping[str, Any],
) -> dict[str, Any]:
    """Everything a rubric prompt may use: the test's vars, then the judge's own names."""
    items = [] if isinstance(rubric, str) else list(rubric)
    text = rubric if isinstance(rubric, str) else numbered(items)
    return {
        **vars_,
        "output": output,
        "rubric": text,
        "items": items,
        "prompt": prompt,
        "reference": reference,
    }


def rubric_messages(variables: Mapping[str, Any], override: Any = None) -> list[dict[str, str]]:
    """The ``llm-rubric`` judge conversation.

    Args:
        variables: From :func:`rubric_variables`.
        override: The assertion's ``rubricPrompt`` (a template string, a JSON list of
            messages in a string, or a list of ``{role, content}``), or None for the packaged
            ``rubric.j2``.

    Raises:
        PromptProblem: The override is malformed, does not render, or never shows the output.
    """
    if override is None:
        # The example is skilleval's own text, so it wins over a test var of the same name.
        return _blocks("rubric.j2", {**variables, "worked_example": WORKED_EXAMPLE})
    return _custom(override, variables)


def rubric_score_messages(variables: Mapping[str, Any]) -> list[dict[str, str]]:
    """The conversation of a free-text ``llm-rubric`` verdict read from choice scores, from
    the packaged ``rubric_score.j2``: its reply is one digit of the score scale."""
    return _blocks("rubric_score.j2", {**variables, "worked_example": WORKED_EXAMPLE})


def reason_messages(
    verdict: Sequence[Mapping[str, str]],
    likeliest: int,
    score: str,
    passed: bool,
    items: Sequence[str] = (),
) -> list[dict[str, str]]:
    """The conversation that asks for a scored verdict's reason: the verdict's own
    conversation, the likeliest digit as the judge's reply, then ``rubric_reason.j2``'s
    request, which states the verdict (``score`` as shown, and whether it passed) and, for a
    list rubric, asks for its ``checks`` too. It shares the verdict's prompt, so a model that
    keeps its KV cells evaluates only the end."""
    template = _env().get_template("rubric_reason.j2")
    text = template.render(score=score, passed=passed, items=list(items)).strip()
    return [
        *(dict(m) for m in verdict),
        {"role": "assistant", "content": str(likeliest)},
        {"role": "user", "content": text},
    ]


def assert_messages(
    *, output: str, statements: Sequence[str], prompt: str, vars_: Mapping[str, Any]
) -> list[dict[str, str]]:
    """The ``llm-assert`` judge conversation, from the packaged ``assert.j2``."""
    variables = {**vars_, "output": output, "statements": list(statements), "prompt": prompt}
    return _blocks("assert.j2", variables)


def graded_messages(name: str, variables: Mapping[str, Any]) -> list[dict[str, str]]:
    """The conversation of one of the promptfoo-compatible graders, from ``templates/<name>.j2``
    (``factuality``, ``closedqa``, ``geval_steps``, ``geval_score``, ``questions``,
    ``context_support``, ``context_needed``, ``select_best``, ``side_by_side``)."""
    return _blocks(f"{name}.j2", variables)


def repair_message(problem: str) -> dict[str, str]:
    """The note appended before the repair retry of an invalid reply."""
    text = _env().get_template("repair.j2").render(problem=problem).strip()
    return {"role": "user", "content": text}


def _as_messages(override: Any) -> list[Mapping[str, Any]]:
    if isinstance(override, str):
        stripped = override.strip()
        if not stripped:
            raise PromptProblem("rubricPrompt is empty")
        if stripped.startswith("["):
            try:
                parsed = json.loads(stripped)
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                return _as_messages(parsed)
        return [{"role": "user", "content": override}]
    if not isinstance(override, list) or not override:
        raise PromptProblem("rubricPrompt must be a template string or a list of messages")
    for i, message in enumerate(override, start=1):
        if not isinstance(message, Mapping) or set(message) != {"role", "content"}:
            raise PromptProblem(f"rubricPrompt message {i} must have exactly role and content")
        if message["role"] not in ROLES:
            raise PromptProblem(
                f"rubricPrompt message {i} has role {message['role']!r}; use one of {ROLES}"
            )
        if not isinstance(message["content"], str):
            raise PromptProblem(f"rubricPrompt message {i} content must be a string")
    return list(override)


def _custom(override: Any, variables: Mapping[str, Any]) -> list[dict[str, str]]:
    from skilleval.suite import template  # lazy: start-up time (jinja2)

    messages = _as_messages(override)
    try:
        if not any("output" in template.variables(m["content"]) for m in messages):
            raise PromptProblem("rubricPrompt never shows the output; add {{ output }}")
        return [
            {"role": m["role"], "content": template.render(m["content"], variables)}
            for m in messages
        ]
    except template.TemplateProblem as exc:
        raise PromptProblem(f"rubricPrompt: {exc.message}") from None
