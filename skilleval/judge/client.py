"""The judge client: greedy, seeded, schema-validated calls with one repair retry.

A judge call either returns a reply that parses and matches its schema, or raises
:class:`JudgeError`. Nothing in between: a truncated or invalid reply is retried once with
twice the token budget, and if the retry fails too the error names what went wrong
("judge reply truncated at 544 tokens"). Assertions turn that into an error verdict, which is
neither a pass nor a fail.

A reply is read strictly: a repeated key, ``NaN``, or a float where the schema says integer
(``"score": 5.0``) makes it invalid, so what the scoring rules would call impossible is
already refused here. Invalid replies never reach the response cache. :class:`SchemaGuard` validates a reply
*inside* the cache wrapper and raises when it is invalid, and
:class:`~skilleval.engine.cache.CachingProvider` stores nothing for a call that raised.
:class:`JudgeClient` puts the guard in place whatever provider it is handed.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from skilleval.engine.base import (
    Completion,
    Embedder,
    Message,
    ModelIdentity,
    Request,
    complete_all,
)
from skilleval.engine.cache import CachingProvider
from skilleval.errors import (
    CannotEmbed,
    InvalidReply,
    InvalidReplyError,
    JudgeError,
    ProviderError,
    TruncatedError,
)
from skilleval.judge import choice
from skilleval.judge.prompts import repair_message
from skilleval.suite.schema import is_valid
from skilleval.util.frozen import frozen
from skilleval.util.jsontext import json_error, reject_constant

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

    from skilleval.engine.base import Provider

ErrorKind = Literal["truncated", "invalid", "provider"]

RETRY_FACTOR: Final = 2
"""The repair retry's token budget, as a multiple of the first call's."""

_CLIP: Final = 160


def _clip(text: str, limit: int = _CLIP) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _describe_error(error: ValidationError) -> str:
    where = error.json_path
    if error.validator == "pattern":
        return f"at {where}: text is too long or contains a quote, backslash or control character"
    return f"at {where}: {_clip(error.message, 120)}"


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = next(key for i, key in enumerate(keys) if key in keys[:i])
        raise ValueError(f"the key {twice!r} appears twice")
    return dict(pairs)


def parse_reply(text: str) -> Any:
    """A judge reply as strict JSON.

    Stricter than :func:`json.loads` twice over: ``NaN`` and ``Infinity`` are refused, and so
    is an object that repeats a key, which ``json.loads`` would read as its last value
    (``{"score": 1, "pass": false, "score": 5, "pass": true}`` would grade as 5 and pass).

    Raises:
        ValueError: The text is not strict JSON (:class:`json.JSONDecodeError` when it
            does not parse at all).
    """
    return json.loads(text, parse_constant=reject_constant, object_pairs_hook=_unique_keys)


@functools.cache
def _validator_class() -> Any:
    # lazy: start-up time
    from jsonschema import Draft202012Validator, validators

    # JSON Schema counts 5.0 as an integer; the scoring rules do not, so neither does the
    # guard. Otherwise a reply the grader must call impossible would pass into the cache.
    strict = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    return validators.extend(Draft202012Validator, type_checker=strict)  # type: ignore[no-untyped-call]


def reply_problem(text: str, schema: Mapping[str, Any]) -> str | None:
    """Why ``text`` is not a JSON value matching ``schema``; None when it is one.

    The JSON must be strict (:func:`parse_reply`) and an ``integer`` must be written as one.
    """
    try:
        value = parse_reply(text)
    except (ValueError, RecursionError) as exc:
        problem = json_error(exc) if isinstance(exc, ValueError) else "nested too deeply"
        return f"not JSON ({problem}): {_clip(text, 80)!r}"
    if not _has_float(value) and is_valid(schema, value):
        # The compiled check is enough when no number could be a 5.0 posing as an integer.
        return None
    from jsonschema.exceptions import best_match  # lazy: start-up time

    error = best_match(_validator_class()(dict(schema)).iter_errors(value))
    return None if error is None else _describe_error(error)


def _has_float(value: Any) -> bool:
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, float):
            return True
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return False


class SchemaGuard:
    """A provider wrapper that raises :class:`InvalidReply` for schema-invalid replies.

    Put it between a cache and the model, so that an invalid reply is an exception by the
    time the cache sees it, and is therefore never stored. Truncated replies pass through:
    the cache already refuses them, and the caller needs to know they were cut.
    """

    def __init__(self, inner: Provider) -> None:
        self.inner = inner
        self.max_concurrency = inner.max_concurrency
        # Requests it decodes together when several calls arrive at once (engine/batch.py).
        self.batch_width = int(getattr(inner, "batch_width", 1))

    def identity(self) -> ModelIdentity:
        return self.inner.identity()

    def cache_salt(self, request: Request) -> str:
        return self.inner.cache_salt(request)

    def complete(self, request: Request) -> Completion:
        return self._checked(request, self.inner.complete(request))

    def complete_batch(self, requests: Sequence[Request]) -> list[Completion | ProviderError]:
        """The inner provider's batch (one call at a time when it does not batch), each
        reply checked as :meth:`complete` checks it; so a guarded model batches as the
        model does, with or without a cache around it."""
        out: list[Completion | ProviderError] = []
        for request, answer in zip(requests, complete_all(self.inner, requests), strict=True):
            try:
                out.append(
                    answer if isinstance(answer, ProviderError) else self._checked(request, answer)
                )
            except InvalidReply as exc:
                out.append(exc)
        return out

    @staticmethod
    def _checked(request: Request, completion: Completion) -> Completion:
        if request.json_schema is not None and not completion.truncated:
            problem = reply_problem(completion.text, request.json_schema)
            if problem is not None:
                raise InvalidReply(problem, completion.text)
        return completion

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The inner provider's vectors; replies are guarded, vectors pass through."""
        inner = self.inner
        if not isinstance(inner, Embedder):
            raise CannotEmbed(f"provider {self.identity().kind} cannot embed")
        return inner.embed(texts)

    def embed_salt(self) -> str:
        inner = self.inner
        return inner.embed_salt() if isinstance(inner, Embedder) else ""

    def close(self) -> None:
        self.inner.close()


def guarded(provider: Provider) -> Provider:
    """``provider`` with a :class:`SchemaGuard` directly around the model, under any cache."""
    if isinstance(provider, CachingProvider):
        if isinstance(provider.inner, SchemaGuard):
            return provider
        return CachingProvider(SchemaGuard(provider.inner), provider.cache, provider.warn)
    if isinstance(provider, SchemaGuard):
        return provider
    return SchemaGuard(provider)


@frozen
class _Attempt:
    value: Any = None
    ok: bool = False
    kind: ErrorKind = "invalid"
    problem: str = ""


class JudgeClient:
    """A grader model behind the :class:`~skilleval.api.Judge` protocol.

    Every call is greedy (temperature 0, top_p 1) with a fixed seed, whatever the generator's
    decoding mode, so the same reply to the same output is graded the same way every time.

    Args:
        provider: The model. A bare provider or a
            :class:`~skilleval.engine.cache.CachingProvider`; either way a
            :class:`SchemaGuard` is put directly around the model, so invalid replies are never
            cached. The judge keeps its own call counters.
        seed: The seed sent with every call.
        scores: The provider scores choices by log-probability (``Capabilities.scores``), so
            a free-text ``llm-rubric`` verdict is read from the score scale's log-probabilities
            (:mod:`skilleval.judge.choice`) instead of written.
        reasons: Write a reason for a failing scored verdict. False where no one reads
            reasons (the fitness check), so that a verdict costs no generated token.
    """

    def __init__(
        self, provider: Provider, *, seed: int = 0, scores: bool = False, reasons: bool = True
    ) -> None:
        self.provider = guarded(provider)
        self.seed = seed
        self.scores = scores
        self.reasons = reasons
        self._lock = threading.Lock()
        self._counts = {
            "calls": 0,
            "scored": 0,
            "replies": 0,
            "retries": 0,
            "repaired": 0,
            "errors": 0,
            "embeds": 0,
        }

    def complete_json(
        self, messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any], max_tokens: int
    ) -> Any:
        """Ask the judge for a JSON reply matching ``schema``.

        Args:
            messages: The conversation, as ``{role, content}`` mappings.
            schema: The JSON Schema the reply is constrained to and validated against.
            max_tokens: The first call's budget; the repair retry gets :data:`RETRY_FACTOR`
                times as much.

        Returns:
            The parsed reply, which matches ``schema``.

        Raises:
            JudgeError: Both calls were truncated or invalid, or the model could not be
                called.
        """
        convo = tuple(Message(m["role"], m["content"]) for m in messages)
        first = self._attempt(convo, schema, max_tokens)
        if first.ok:
            return first.value
        self._count("retries")
        budget = max_tokens * RETRY_FACTOR
        if first.kind != "truncated":
            # Greedy decoding would repeat the same invalid reply; the note changes the prompt.
            convo = (*convo, Message(**repair_message(first.problem)))
        second = self._attempt(convo, schema, budget)
        if second.ok:
            self._count("repaired")
            return second.value
        self._count("errors")
        if second.kind == "truncated":
            message = f"judge reply truncated at {budget} tokens, after a repair retry"
        else:
            message = f"judge reply invalid after a repair retry: {second.problem}"
        raise JudgeError(message, kind=second.kind, attempts=2, max_tokens=budget)

    def score_choices(
        self, messages: Sequence[Mapping[str, str]], choices: Sequence[str]
    ) -> Mapping[str, float] | None:
        """Each of ``choices``' log-probability as the judge's whole reply, from one greedy
        choice request; nothing is sampled.

        Returns:
            The scores, or None when the provider does not score choices (not declared, or
            the reply came back without a score for every choice, as a scripted model's
            does), so that the caller asks for the written reply instead.

        Raises:
            JudgeError: The model could not be called.
        """
        if not self.scores:
            return None
        request = Request(
            messages=tuple(Message(m["role"], m["content"]) for m in messages),
            max_tokens=1,
            temperature=0.0,
            top_p=1.0,
            seed=self.seed,
            choices=tuple(choices),
            purpose="judge",
        )
        self._count("calls")
        try:
            completion = self.provider.complete(request)
        except ProviderError as exc:
            self._count("errors")
            raise JudgeError(
                f"judge model failed: {exc}", kind="provider", attempts=1, max_tokens=1
            ) from None
        scores = completion.choice_scores
        if scores is None or any(c not in scores for c in choices):
            return None
        self._count("scored")
        return {c: float(scores[c]) for c in choices}

    def _attempt(
        self, convo: tuple[Message, ...], schema: Mapping[str, Any], max_tokens: int
    ) -> _Attempt:
        request = Request(
            messages=convo,
            max_tokens=max_tokens,
            temperature=0.0,
            top_p=1.0,
            seed=self.seed,
            json_schema=schema,
            purpose="judge",
        )
        self._count("calls")
        try:
            completion = self.provider.complete(request)
        except InvalidReply as exc:
            return _Attempt(kind="invalid", problem=exc.problem)
        except InvalidReplyError as exc:
            return _Attempt(kind="invalid", problem=_clip(str(exc)))
        except TruncatedError:
            return _Attempt(kind="truncated", problem=f"truncated at {max_tokens} tokens")
        except ProviderError as exc:
            self._count("errors")
            raise JudgeError(
                f"judge model failed: {exc}", kind="provider", attempts=1, max_tokens=max_tokens
            ) from None
        if completion.truncated:
            return _Attempt(kind="truncated", problem=f"truncated at {max_tokens} tokens")
        # A cache hit skips the guard; an entry written before it existed must not slip by.
        problem = reply_problem(completion.text, schema)
        if problem is not None:
            return _Attempt(kind="invalid", problem=problem)
        self._count("replies")
        return _Attempt(value=parse_reply(completion.text), ok=True)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts`` from the judge's model (through its cache), for the embedding
        types (``similar``, ``answer-relevance``).

        Raises:
            CannotEmbed: The judge's model has no way to embed ("provider echo cannot embed").
            JudgeError: The model failed while embedding.
        """
        provider = self.provider
        if not isinstance(provider, Embedder):
            raise CannotEmbed(f"provider {provider.identity().kind} cannot embed")
        self._count("embeds")
        try:
            return provider.embed(texts)
        except CannotEmbed:
            raise
        except ProviderError as exc:
            self._count("errors")
            raise JudgeError(
                f"judge model could not embed: {exc}", kind="provider", attempts=1, max_tokens=0
            ) from None

    def _count(self, name: str) -> None:
        with self._lock:
            self._counts[name] += 1

    def stats(self) -> dict[str, int]:
        """Call counters: calls made, verdicts scored from choices, good replies, retries,
        retries that repaired, errors.

        When the provider is a cache wrapper, its ``hits`` and token counts are included.
        """
        with self._lock:
            out = dict(self._counts)
        if isinstance(self.provider, CachingProvider):
            cache = self.provider.stats()
            out |= {
                "cache_hits": cache["hits"],
                "prompt_tokens": cache["prompt_tokens"],
                "completion_tokens": cache["completion_tokens"],
            }
        return out

    def describe(self) -> dict[str, Any]:
        """What the report records about the judge: its model, and that it decodes greedily."""
        try:
            model: dict[str, Any] = self.provider.identity().to_json()
        except ProviderError as exc:
            model = {"error": str(exc)}
        return {
            "model": model,
            "decoding": {"greedy": True, "temperature": 0.0, "top_p": 1.0, "seed": self.seed},
            "repair_retries": 1,
            "retry_budget_factor": RETRY_FACTOR,
            "reply_validation": "JSON Schema draft 2020-12",
            "rubric_verdict": choice.MODE if self.scores else choice.WRITTEN,
        }

    def close(self) -> None:
        """Close the provider (only when the judge owns it, not when it shares the generator's)."""
        self.provider.close()
