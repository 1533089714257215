"""Providers that need no model: ``echo`` and ``scripted``.

They let suites, plugins and skilleval's own tests run without weights. The scripted
provider answers by test id or by a regex over the prompt, with one reply per trial when
``outputs:`` lists several. Both embed texts as hashed bags of words (:func:`word_vector`):
deterministic, and texts that share words come out close.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from skilleval.api import Capabilities
from skilleval.engine.base import Completion, ModelIdentity, ProviderContext, Request, clean_reply
from skilleval.errors import ProviderError, RegexError, RegexTimeoutError
from skilleval.plugins.markers import ConfigContext, provider
from skilleval.sandbox import saferegex
from skilleval.util.fileref import is_ref
from skilleval.util.frozen import frozen


def _matches(pattern: str, prompt: str) -> bool:
    try:
        return saferegex.search(pattern, prompt) is not None
    except (RegexError, RegexTimeoutError) as exc:
        raise ProviderError(f"scripted response `match`: {exc}") from None


def _tokens(text: str) -> int:
    # A rough count for reports: scripted replies have no tokenizer.
    return len(text.split())


WORD_VECTOR_DIMS = 64
"""Length of the vectors the model-free providers embed texts as."""


def word_vector(text: str) -> list[float]:
    """``text`` as a bag of lower-cased words hashed into :data:`WORD_VECTOR_DIMS` counts.

    A stand-in for a real embedding: the same text always gets the same vector, texts made of
    the same words get the same direction, and texts with no word in common are orthogonal
    unless two words share a bucket. A text without words is the zero vector.
    """
    vector = [0.0] * WORD_VECTOR_DIMS
    # Words are runs of letters, digits and underscores (no `re` here: see saferegex).
    words = "".join(c if c.isalnum() or c == "_" else " " for c in text.lower()).split()
    for word in words:
        digest = hashlib.sha256(word.encode("utf-8", "surrogatepass")).digest()
        vector[int.from_bytes(digest[:4], "big") % WORD_VECTOR_DIMS] += 1.0
    return vector


class EchoProvider:
    """Replies with the last user message, unchanged."""

    max_concurrency = 8

    def identity(self) -> ModelIdentity:
        return ModelIdentity(kind="echo", name="echo")

    def complete(self, request: Request) -> Completion:
        start = time.perf_counter()
        if request.choices:
            text = request.choices[-1]
        elif request.json_schema is not None:
            text = json.dumps(_minimal(request.json_schema))
        else:
            users = [m.content for m in request.messages if m.role == "user"]
            text = users[-1] if users else ""
        prompt = sum(_tokens(m.content) for m in request.messages)
        return clean_reply(
            Completion(
                text=text,
                prompt_tokens=prompt,
                completion_tokens=_tokens(text),
                latency_ms=(time.perf_counter() - start) * 1000,
                tokens_evaluated=prompt,
            )
        )

    def cache_salt(self, request: Request) -> str:
        return ""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Hashed bags of words (:func:`word_vector`)."""
        return [word_vector(t) for t in texts]

    def embed_salt(self) -> str:
        return f"words{WORD_VECTOR_DIMS}"

    def close(self) -> None:
        pass


def _minimal(schema: Mapping[str, Any]) -> Any:
    """The simplest value that fits a schema: echo has no opinions."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return {k: _minimal(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return 0
    return ""


class ScriptedProvider:
    """Replies from rules written in the suite: by test id, by prompt regex, or a default."""

    max_concurrency = 8

    def __init__(self, config: ScriptedConfig) -> None:
        self.rules = config.responses
        self.default = config.default
        # surrogatepass: a rule written with a "\ud800" escape still hashes, and uniquely.
        rules = json.dumps([dict(r) for r in self.rules], sort_keys=True, default=str)
        digest = hashlib.sha256(rules.encode("utf-8", "surrogatepass"))
        digest.update((self.default or "").encode("utf-8", "surrogatepass"))
        self._digest = digest.hexdigest()
        self.calls = 0

    def identity(self) -> ModelIdentity:
        return ModelIdentity(
            kind="scripted", name="scripted", details={"script": self._digest[:16]}
        )

    def complete(self, request: Request) -> Completion:
        self.calls += 1
        test_id, arm = request.test_id, request.arm
        # Rules match the whole conversation, so a judge's rubric (often in the system
        # message) can be matched as well as a user's question.
        prompt = "\n".join(m.content for m in request.messages)
        text = None
        scores: dict[str, float] | None = None
        logprobs: tuple[float, ...] | None = None
        for rule in self.rules:
            if "arm" in rule and rule["arm"] != arm:
                continue
            if "id" in rule and rule["id"] != test_id:
                continue
            if "match" in rule and not _matches(str(rule["match"]), prompt):
                continue
            if "id" not in rule and "match" not in rule and "arm" not in rule:
                continue
            text, scores = _answer(rule, request)
            if request.logprobs and "logprobs" in rule:
                logprobs = tuple(float(v) for v in rule["logprobs"])
            break
        if text is None:
            if request.choices:
                text = request.choices[-1]
            elif request.json_schema is not None:
                text = json.dumps(_minimal(request.json_schema))
            else:
                text = self.default if self.default is not None else ""
        prompt_tokens = sum(_tokens(m.content) for m in request.messages)
        return clean_reply(
            Completion(
                text=text,
                prompt_tokens=prompt_tokens,
                completion_tokens=_tokens(text),
                latency_ms=0.1,
                choice_scores=scores,
                tokens_evaluated=prompt_tokens,
                token_logprobs=logprobs,
            )
        )

    def cache_salt(self, request: Request) -> str:
        # Replies depend on the test id, which is not part of the messages.
        return f"{request.test_id}@{request.arm}"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Hashed bags of words (:func:`word_vector`), as the echo provider."""
        return [word_vector(t) for t in texts]

    def embed_salt(self) -> str:
        return f"words{WORD_VECTOR_DIMS}"

    def close(self) -> None:
        pass


def _answer(rule: Mapping[str, Any], request: Request) -> tuple[str, dict[str, float] | None]:
    """A rule's reply and, for a constrained choice, the scores it gives the options.

    A rule with ``scores`` plays a router that exposes log-probabilities, as the llama
    provider does: it must score every option, since a real router scores them all.
    """
    scores = rule.get("scores")
    if scores is None or not request.choices:
        if "output" not in rule and "outputs" not in rule:
            raise ProviderError(
                "a scripted rule with only `scores:` answers routing requests; "
                "add `output:` to answer others"
            )
        return _pick(rule, request.trial), None
    missing = [c for c in request.choices if c not in scores]
    if missing:
        raise ProviderError(f"scripted `scores:` names no score for {', '.join(missing)}")
    given = {c: float(scores[c]) for c in request.choices}
    if "output" in rule or "outputs" in rule:
        return _pick(rule, request.trial), given
    return max(request.choices, key=lambda c: given[c]), given


def _pick(rule: Mapping[str, Any], trial: int) -> str:
    if "outputs" in rule:
        outputs = list(rule["outputs"])
        return str(outputs[trial % len(outputs)])
    return str(rule["output"])


# -- registrations ----------------------------------------------------------------------------


@provider("echo")
def echo(config: object, context: ProviderContext) -> EchoProvider:
    """Replies with the last user message; no model (wiring and plugin tests)."""
    return EchoProvider()


SCRIPTED_RULE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "description": "Answer this test id."},
        "match": {"type": "string", "description": "Answer prompts that this regex finds."},
        "arm": {"type": "string", "description": "Only in this arm (on, off, routed)."},
        "output": {"type": "string"},
        "scores": {
            "type": "object",
            "additionalProperties": {"type": "number"},
            "minProperties": 1,
            "description": "For a routing request: each option's log-probability score; "
            "the reply is the best one unless `output` says otherwise.",
        },
        "outputs": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "One reply per trial, cycling.",
        },
        "logprobs": {
            "type": "array",
            "items": {"type": "number", "maximum": 0},
            "description": "The reply's token log-probabilities, given to a request that asks"
            " for them (`perplexity` checks).",
        },
    },
}

SCRIPTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "responses": {
            "description": "Rules tried in order, or file://.",
            "anyOf": [
                {
                    "type": "string",
                    "pattern": "^file://",
                    "description": "A file, relative to this file.",
                },
                {"type": "array", "items": SCRIPTED_RULE},
            ],
        },
        "default": {"type": "string", "description": "The reply when no rule matches."},
    },
}


@frozen
class ScriptedConfig:
    """The scripted provider's rules, in order, and its fallback reply."""

    responses: tuple[Mapping[str, Any], ...] = ()
    """Rules ``{id|match|arm, output|outputs|scores}``, tried in order."""
    default: str | None = None

    @classmethod
    def configure(cls, raw: Mapping[str, Any], ctx: ConfigContext) -> ScriptedConfig:
        rules = raw.get("responses") or []
        if is_ref(rules):
            rules = ctx.read_ref(str(rules), "responses") or []
        return cls(tuple(_checked_rules(rules, ctx)), raw.get("default"))

    def to_json(self) -> dict[str, Any]:
        return {}


def _checked_rules(rules: Any, ctx: ConfigContext) -> list[Mapping[str, Any]]:
    if not isinstance(rules, list):
        ctx.error("scripted `responses` must be a list of {id|match, output|outputs}")
        return []
    out: list[Mapping[str, Any]] = []
    for rule in rules:
        if not isinstance(rule, dict) or not ({"output", "outputs", "scores"} & set(rule)):
            ctx.error("each scripted response needs `output:`, `outputs:` or `scores:`")
            continue
        if "match" in rule:
            try:
                saferegex.compile(str(rule["match"]))
            except RegexError as exc:
                ctx.error(f"scripted response `match` is not a valid regex: {exc}")
                continue
        out.append(rule)
    return out


@provider(
    "scripted",
    schema=SCRIPTED_SCHEMA,
    configure=ScriptedConfig.configure,
    capabilities=Capabilities(scores=True),
)
def scripted(config: ScriptedConfig, context: ProviderContext) -> ScriptedProvider:
    """Replies from rules in the suite: by test id, prompt regex or arm; no model."""
    return ScriptedProvider(config)
