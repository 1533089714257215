"""The agent loop: the model calls tools until it answers, one constrained JSON step at a time.

Every step is one model call whose reply must be one JSON object::

    {"thought": "...", "action": {"tool": "NAME", "arguments": {...}}}   call a tool
    {"thought": "...", "action": {"final": "..."}}                      answer the user

Each request is constrained to the step schema (:mod:`skilleval.agent.prompting`); the reply
is read by :mod:`skilleval.agent.reply`, and a tool call's arguments are validated against the
tool's full schema (:mod:`skilleval.agent.calls`): a violation becomes an error step the model
sees and can correct. Replies from unconstrained providers go through the same checks: a
reply that is not JSON, an unknown tool or invalid arguments are error steps, and the loop
goes on until ``max_steps``.

Tool results come back as ``user`` messages (``Result of NAME: ...``), which every chat
template accepts, unlike a ``tool`` role.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from skilleval.agent.calls import argument_error, call_tool
from skilleval.agent.prompting import agent_system, step_schema
from skilleval.agent.records import AgentRun, StopReason, TurnResult
from skilleval.agent.reply import parse_step
from skilleval.engine.base import Completion, Message, Provider, Request
from skilleval.errors import ProviderError
from skilleval.suite.agent_config import ToolConfig
from skilleval.trajectory import Step, ToolResult
from skilleval.util.scrub import scrub_text

MAX_OBSERVATION = 8000
"""Characters of a tool result shown to the model; the rest is cut and the step marked truncated."""

AfterTurn = Callable[[TurnResult], None]


@dataclass
class _State:
    messages: list[Message]
    steps: list[Step] = field(default_factory=list)
    turns: list[TurnResult] = field(default_factory=list)
    error: str | None = None


def run_agent(
    provider: Provider,
    *,
    system: str | None,
    turns: Sequence[str],
    tools: Sequence[ToolConfig],
    workspace: Path | None,
    max_steps: int,
    max_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int = 0,
    trial: int = 0,
    test_id: str = "",
    arm: str = "",
    think: bool = True,
    max_observation: int = MAX_OBSERVATION,
    after_turn: AfterTurn | None = None,
) -> AgentRun:
    """Run the model as an agent over ``turns``, calling ``tools`` in ``workspace``.

    Args:
        provider: The model.
        system: The caller's system prompt (the skill in the ON arm), or None.
        turns: User messages, in order; each gets its own loop of up to ``max_steps`` calls.
        tools: What the model may call.
        workspace: Where command tools run and what python tools receive.
        max_steps: Model calls allowed per turn.
        max_tokens: Token limit of each model call.
        temperature: Sampling temperature (0 is greedy).
        top_p: Nucleus sampling mass.
        seed: Sampling seed.
        trial: Trial number; part of the cache key.
        test_id: Passed through to the provider (the scripted provider keys on it).
        arm: Passed through to the provider.
        think: Ask for a ``thought`` before each action.
        max_observation: Characters of a tool result shown to the model.
        after_turn: Called as each turn ends, while the workspace still reflects that turn
            (turn-level file checks belong there).

    Returns:
        The run; a provider failure ends it early with ``error`` set. Never raises for model
        or tool misbehaviour.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, not {max_steps}")
    schema = step_schema(tools, think=think)
    by_name = {tool.name: tool for tool in tools}
    state = _State([Message("system", agent_system(system, tools, think=think))])
    for turn, user in enumerate(turns):
        _add_user(state.messages, user)
        first = len(state.steps)
        answer: str | None = None
        for _ in range(max_steps):
            request = Request(
                messages=tuple(state.messages),
                max_tokens=max_tokens,
                temperature=temperature,
                top_p=top_p,
                seed=seed,
                json_schema=schema,
                trial=trial,
                test_id=test_id,
                arm=arm,
            )
            try:
                completion = provider.complete(request)
            except ProviderError as exc:
                state.error = str(exc)
                break
            state.messages.append(Message("assistant", scrub_text(completion.text)[0]))
            step, observation = _step(
                completion, len(state.steps), turn, by_name, workspace, max_tokens, max_observation
            )
            state.steps.append(step)
            if step.kind == "final":
                answer = step.answer or ""
                break
            state.messages.append(Message("user", observation))
        stop: StopReason = (
            "error" if state.error is not None else "max_steps" if answer is None else "answer"
        )
        result = TurnResult(turn, user, answer or "", stop, tuple(state.steps[first:]))
        state.turns.append(result)
        if after_turn is not None:
            after_turn(result)
        if state.error is not None:
            break
    final = state.turns[-1].output if state.turns else ""
    return AgentRun(
        final=final,
        messages=tuple(state.messages),
        turns=tuple(state.turns),
        steps=tuple(state.steps),
        error=state.error,
    )


def _add_user(messages: list[Message], text: str) -> None:
    # A turn that ran out of steps ends on an observation; strict chat templates insist that
    # user and assistant alternate, so the next user message joins it.
    if messages and messages[-1].role == "user":
        messages[-1] = Message("user", f"{messages[-1].content}\n\n{text}")
    else:
        messages.append(Message("user", text))


def _step(
    completion: Completion,
    index: int,
    turn: int,
    tools: Mapping[str, ToolConfig],
    workspace: Path | None,
    max_tokens: int,
    max_observation: int,
) -> tuple[Step, str]:
    """The step a reply makes, and the observation to show the model next."""
    base = Step(
        index=index,
        turn=turn,
        kind="invalid",
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        tokens_evaluated=completion.tokens_evaluated,
        latency_ms=completion.latency_ms,
        cached=completion.cached,
    )
    reply, _ = scrub_text(completion.text)
    if completion.truncated:
        error = f"reply was cut off at max_tokens ({max_tokens})"
        return replace(base, error=error, reply=reply), _retry(error)
    parsed = parse_step(completion.text)
    base = replace(base, replaced=parsed.replaced)
    if parsed.error is not None:
        return replace(base, thought=parsed.thought, error=parsed.error, reply=reply), _retry(
            parsed.error
        )
    if parsed.final is not None:
        return replace(base, kind="final", thought=parsed.thought, answer=parsed.final), ""
    name = parsed.tool or ""
    step = replace(base, kind="tool", thought=parsed.thought, tool=name, arguments=parsed.arguments)
    tool = tools.get(name)
    if tool is None:
        known = ", ".join(tools) or "none"
        error = f"unknown tool {name!r}; the tools are: {known}"
        return replace(step, error=error), _retry(error)
    problem = argument_error(tool, parsed.arguments)
    if problem is not None:
        error = f"invalid arguments for {name}: {problem}"
        return replace(step, error=error), _retry(error)
    result, tool_ms = call_tool(tool, parsed.arguments, workspace)
    shown, cut = _clip(result, max_observation)
    # A tool's own text (a python tool's return value or exception) enters here.
    shown, note = scrub_text(shown)
    failure = None if result.error is None else scrub_text(result.error)[0]
    step = replace(
        step,
        replaced=step.replaced + ((f"result: {note}",) if note else ()),
        ran=result.started,
        result=shown,
        error=failure,
        truncated=result.truncated or cut,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        tool_ms=tool_ms,
    )
    if failure is not None:
        body = f"\n{shown}" if shown else ""
        return step, f"Error from {name}: {failure}{body}"
    return step, f"Result of {name}:\n{shown}"


def _clip(result: ToolResult, limit: int) -> tuple[str, bool]:
    text = result.output
    if len(text) <= limit:
        return text, False
    return f"{text[:limit]}\n[result cut at {limit} characters]", True


def _retry(error: str) -> str:
    return f"Error: {error}. Reply with one JSON object as described."
