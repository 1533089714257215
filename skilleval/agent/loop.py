"""The agent loop: the model calls tools until it answers, one constrained JSON step at a time.

Every step is one model call whose reply must be one JSON object::

    {"thought": "...", "action": {"tool": "NAME", "arguments": {...}}}   call a tool
    {"thought": "...", "action": {"final": "..."}}                      answer the user

The request's ``json_schema`` is a union with one branch per tool (its ``arguments`` held to
that tool's parameters) plus the final answer, so a constrained provider can only produce a
declared tool with well-formed arguments. ``thought`` comes first: a small model that has
said what it is about to do picks the action more reliably.

The schema sent for decoding keeps only the *structural* keywords of each parameters schema
(types, properties, required, enum, const, items, lengths): a grammar cannot enforce
``minimum``, ``pattern``, ``format`` and the like, and a provider that validates its reply
against the schema it was sent would turn such a slip into a failed run. The arguments are
then validated against the full schema here, and a violation becomes an error step the model
sees and can correct. Replies from unconstrained providers go through the same checks: a
reply that is not JSON, an unknown tool or invalid arguments are error steps, and the loop
goes on until ``max_steps``.

Tool results come back as ``user`` messages (``Result of NAME: ...``), which every chat
template accepts, unlike a ``tool`` role.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from skilleval.agent.tools import ToolResult, ToolSpec, as_text
from skilleval.engine.base import Completion, Message, Provider, Request
from skilleval.errors import ProviderError

MAX_OBSERVATION = 8000
"""Characters of a tool result shown to the model; the rest is cut and the step marked truncated."""

StepKind = Literal["tool", "final", "invalid"]
StopReason = Literal["answer", "max_steps", "error"]

_STRUCTURAL = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
    }
)


# -- records ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One model call of the loop and what came of it."""

    index: int
    """Position in the whole run, from 0."""
    turn: int
    """Which user turn it belongs to, from 0."""
    kind: StepKind
    """``tool`` (a call was attempted), ``final`` (an answer) or ``invalid`` (neither parsed)."""
    thought: str | None = None
    tool: str | None = None
    arguments: Any = None
    result: str | None = None
    """The observation the model was shown (tool steps)."""
    error: str | None = None
    """Why the step failed: not JSON, unknown tool, invalid arguments, the tool failed."""
    ran: bool = False
    """True when the tool's implementation was actually invoked."""
    truncated: bool = False
    """True when the tool's output was cut (command output cap or the observation limit)."""
    exit_code: int | None = None
    timed_out: bool = False
    answer: str | None = None
    """The final answer (final steps)."""
    reply: str | None = None
    """The model's raw reply, kept for invalid steps only (the transcript has the rest)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_evaluated: int = 0
    """Prompt tokens the model actually evaluated (the rest came from its KV cache)."""
    latency_ms: float = 0.0
    """Time of the model call."""
    tool_ms: float = 0.0
    """Time the tool took."""
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "turn": self.turn,
            "kind": self.kind,
            "thought": self.thought,
            "tool": self.tool,
            "arguments": self.arguments,
            "result": self.result,
            "error": self.error,
            "ran": self.ran,
            "truncated": self.truncated,
            "exit_code": self.exit_code,
            "timed_out": self.timed_out,
            "answer": self.answer,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "tokens_evaluated": self.tokens_evaluated,
            "latency_ms": round(self.latency_ms, 3),
            "tool_ms": round(self.tool_ms, 3),
            "cached": self.cached,
        }
        if self.reply is not None:
            out["reply"] = self.reply
        return out


@dataclass(frozen=True, slots=True)
class TurnResult:
    """One user turn: its message, its steps and its answer."""

    index: int
    user: str
    output: str
    """The final answer; '' when the turn ended without one."""
    stop_reason: StopReason
    steps: tuple[Step, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "user": self.user,
            "output": self.output,
            "stop_reason": self.stop_reason,
            "steps": [s.index for s in self.steps],
        }


@dataclass(frozen=True, slots=True)
class AgentRun:
    """A whole agent run: the transcript, every step, the per-turn answers and totals."""

    final: str
    """The last turn's answer ('' when it gave none)."""
    messages: tuple[Message, ...]
    turns: tuple[TurnResult, ...]
    steps: tuple[Step, ...]
    error: str | None = None
    """Why the run could not finish (the provider failed, the workspace could not be set up)."""

    @classmethod
    def failed(cls, error: str, messages: Sequence[Message] = ()) -> AgentRun:
        """A run that never started, e.g. because the workspace set-up failed."""
        return cls(final="", messages=tuple(messages), turns=(), steps=(), error=error)

    @property
    def tool_calls(self) -> int:
        return sum(1 for s in self.steps if s.ran)

    def trajectory(self) -> list[dict[str, Any]]:
        """The steps as plain data: what trajectory assertions and JMESPath queries see."""
        return [s.to_json() for s in self.steps]

    def totals(self) -> dict[str, Any]:
        return {
            "steps": len(self.steps),
            "tool_calls": self.tool_calls,
            "error_steps": sum(1 for s in self.steps if s.error is not None),
            "prompt_tokens": sum(s.prompt_tokens for s in self.steps),
            "completion_tokens": sum(s.completion_tokens for s in self.steps),
            "latency_ms": round(sum(s.latency_ms for s in self.steps), 3),
            "tool_ms": round(sum(s.tool_ms for s in self.steps), 3),
        }

    def as_completion(self) -> Completion:
        """The run summed up as one completion, for code that reports single calls."""
        last = self.steps[-1] if self.steps else None
        return Completion(
            text=self.final,
            finish_reason="stop" if last is None or last.kind == "final" else "max_steps",
            prompt_tokens=sum(s.prompt_tokens for s in self.steps),
            completion_tokens=sum(s.completion_tokens for s in self.steps),
            latency_ms=sum(s.latency_ms for s in self.steps),
            cached=bool(self.steps) and all(s.cached for s in self.steps),
            tokens_evaluated=sum(s.tokens_evaluated for s in self.steps),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "final": self.final,
            "error": self.error,
            "turns": [t.to_json() for t in self.turns],
            "steps": self.trajectory(),
            "totals": self.totals(),
            "messages": [m.to_json() for m in self.messages],
        }


# -- what the model is asked for --------------------------------------------------------------


def decoding_schema(schema: Any) -> dict[str, Any]:
    """The part of a parameters schema a grammar can enforce (see the module docstring).

    ``$ref`` is replaced by "any value": refs are relative to the tool's own schema, which is
    nested inside the step schema. The full schema still validates the arguments.
    """
    if not isinstance(schema, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _STRUCTURAL:
            continue
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {name: decoding_schema(sub) for name, sub in value.items()}
        elif key in ("anyOf", "oneOf", "prefixItems") and isinstance(value, list):
            # The grammar treats oneOf as anyOf; exclusivity is checked by validation.
            out["anyOf" if key == "oneOf" else key] = [decoding_schema(v) for v in value]
        elif key == "items" or (key == "additionalProperties" and isinstance(value, Mapping)):
            out[key] = decoding_schema(value)
        else:
            out[key] = value
    return out


def step_schema(tools: Sequence[ToolSpec], *, think: bool = True) -> dict[str, Any]:
    """The JSON Schema every step's reply must satisfy."""
    actions: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": tool.name},
                "arguments": {"type": "object", **decoding_schema(tool.parameters)},
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    actions.append(
        {
            "type": "object",
            "properties": {"final": {"type": "string"}},
            "required": ["final"],
            "additionalProperties": False,
        }
    )
    properties: dict[str, Any] = {"thought": {"type": "string"}} if think else {}
    properties["action"] = actions[0] if len(actions) == 1 else {"anyOf": actions}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def agent_system(system: str | None, tools: Sequence[ToolSpec], *, think: bool = True) -> str:
    """The system message: the caller's (the skill, in the ON arm), then how to act."""
    thought = '"thought": "why", ' if think else ""
    lines = []
    if tools:
        lines += [
            "You can use tools. Answer every message with exactly one JSON object:",
            f'- to call a tool: {{{thought}"action": {{"tool": "NAME", "arguments": {{...}}}}}}',
            f'- to reply to the user: {{{thought}"action": {{"final": "your answer"}}}}',
            "Call one tool at a time. After each call you get its result; then call another "
            "tool or reply.",
            "",
            "Tools:",
        ]
        for tool in tools:
            lines.append(f"- {tool.name}: {tool.description or '(no description)'}")
            lines.append(f"  arguments: {_signature(tool.parameters)}")
    else:
        lines.append(
            f'Answer every message with exactly one JSON object: {{{thought}"action": '
            '{"final": "your answer"}}'
        )
    guide = "\n".join(lines)
    return f"{system.rstrip()}\n\n{guide}" if system and system.strip() else guide


def _signature(parameters: Mapping[str, Any]) -> str:
    props = parameters.get("properties") or {}
    if not props:
        return "none (send {})"
    required = set(parameters.get("required") or ())
    parts = []
    for name, sub in props.items():
        sub = sub if isinstance(sub, Mapping) else {}
        if "enum" in sub:
            kind = " or ".join(json.dumps(v) for v in sub["enum"])
        else:
            kind = str(sub.get("type", "any"))
        flags = f"{kind}, required" if name in required else kind
        text = f"{name} ({flags})"
        if sub.get("description"):
            text += f": {sub['description']}"
        parts.append(text)
    return "; ".join(parts)


# -- parsing a reply --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Parsed:
    thought: str | None = None
    tool: str | None = None
    arguments: Any = None
    final: str | None = None
    error: str | None = None


def parse_step(text: str) -> _Parsed:
    """Read one reply; lenient about a missing ``action`` wrapper and surrounding prose."""
    data = _json_object(text)
    if data is None:
        shown = " ".join(text.split())[:120]
        return _Parsed(error=f"reply is not a JSON object: {shown!r}")
    thought = data.get("thought")
    thought = thought if isinstance(thought, str) else None
    action = data.get("action", data)
    if not isinstance(action, Mapping):
        return _Parsed(thought, error="`action` must be an object with `tool` or `final`")
    if "final" in action:
        final = action["final"]
        return _Parsed(thought, final=final if isinstance(final, str) else as_text(final))
    if "tool" in action:
        name = action["tool"]
        if not isinstance(name, str):
            return _Parsed(thought, error=f"`tool` must be a tool name, not {as_text(name)}")
        return _Parsed(thought, tool=name, arguments=action.get("arguments", {}))
    return _Parsed(thought, error="reply is neither a tool call nor a final answer")


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        from skilleval.assertions.builtin.structured import json_fragments

        value = next((v for _, v in json_fragments(text) if isinstance(v, dict)), None)
    return value if isinstance(value, dict) else None


# -- the loop ---------------------------------------------------------------------------------

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
    tools: Sequence[ToolSpec],
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
            state.messages.append(Message("assistant", completion.text))
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
    tools: Mapping[str, ToolSpec],
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
    if completion.truncated:
        error = f"reply was cut off at max_tokens ({max_tokens})"
        return replace(base, error=error, reply=completion.text), _retry(error)
    parsed = parse_step(completion.text)
    if parsed.error is not None:
        return replace(
            base, thought=parsed.thought, error=parsed.error, reply=completion.text
        ), _retry(parsed.error)
    if parsed.final is not None:
        return replace(base, kind="final", thought=parsed.thought, answer=parsed.final), ""
    name = parsed.tool or ""
    step = replace(base, kind="tool", thought=parsed.thought, tool=name, arguments=parsed.arguments)
    tool = tools.get(name)
    if tool is None:
        known = ", ".join(tools) or "none"
        error = f"unknown tool {name!r}; the tools are: {known}"
        return replace(step, error=error), _retry(error)
    problem = tool.argument_error(parsed.arguments)
    if problem is not None:
        error = f"invalid arguments for {name}: {problem}"
        return replace(step, error=error), _retry(error)
    result, tool_ms = tool.call(parsed.arguments, workspace)
    shown, cut = _clip(result, max_observation)
    step = replace(
        step,
        ran=True,
        result=shown,
        error=result.error,
        truncated=result.truncated or cut,
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        tool_ms=tool_ms,
    )
    if result.error is not None:
        body = f"\n{shown}" if shown else ""
        return step, f"Error from {name}: {result.error}{body}"
    return step, f"Result of {name}:\n{shown}"


def _clip(result: ToolResult, limit: int) -> tuple[str, bool]:
    text = result.output
    if len(text) <= limit:
        return text, False
    return f"{text[:limit]}\n[result cut at {limit} characters]", True


def _retry(error: str) -> str:
    return f"Error: {error}. Reply with one JSON object as described."
