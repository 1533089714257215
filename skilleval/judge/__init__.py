"""The judge: a grader model for the model-tier assertions (``llm-rubric``, ``llm-assert``).

:class:`JudgeClient` wraps any provider behind the
:class:`~skilleval.api.Judge` protocol: greedy, seeded calls whose replies are
locked to a JSON Schema, validated, retried once when truncated or invalid, and never cached
when invalid. The reply schemas and budgets are in :mod:`skilleval.judge.schemas`, the
scoring rules in :mod:`skilleval.judge.scoring`, the prompts in :mod:`skilleval.judge.prompts`
(templates in ``templates/``) and the fitness self-test in :mod:`skilleval.runner.judgecheck`.
"""

from __future__ import annotations

from skilleval.errors import InvalidReply, JudgeError
from skilleval.judge.client import RETRY_FACTOR, JudgeClient, SchemaGuard, reply_problem

__all__ = [
    "RETRY_FACTOR",
    "InvalidReply",
    "JudgeClient",
    "JudgeError",
    "SchemaGuard",
    "reply_problem",
]
