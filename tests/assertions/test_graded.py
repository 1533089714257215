"""promptfoo's model-graded types on a scripted judge: each passes, fails, and errs apart from
both (a judge that fails, a reply that cannot be a grade), and reads its options."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from fakes import FakeProvider

from skilleval.api import Check, Verdict
from skilleval.assertions.builtin import context as context_types
from skilleval.assertions.builtin import embedding, graded
from skilleval.engine.testing import word_vector
from skilleval.errors import ProviderError
from skilleval.judge import JudgeClient
from skilleval.judge import graded as rules


class Embedding(FakeProvider):
    """A fake judge model that also embeds, as the model-free providers do."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [word_vector(t) for t in texts]

    def embed_salt(self) -> str:
        return ""


def judge(*replies: Any, embeds: bool = False) -> JudgeClient:
    model = Embedding(replies) if embeds else FakeProvider(replies)
    return JudgeClient(model)


def run(fn: Any, judge_: Any, value: Any = None, **kw: Any) -> Verdict:
    kw.setdefault("output", "Paris is the capital of France.")
    kw.setdefault("prompt", "What is the capital of France?")
    verdict: Verdict = fn(Check(value=value, judge=judge_, **kw))
    return verdict


def units(*verdicts: str) -> dict[str, Any]:
    return {
        "verdicts": [
            {"id": i, "reason": "seen", "verdict": v} for i, v in enumerate(verdicts, start=1)
        ]
    }


# --- factuality -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("category", "passed", "name"),
    [
        ("A", True, "subset"),
        ("C", True, "agree"),
        ("D", False, "disagree"),
        ("E", True, "differButFactual"),
    ],
)
def test_factuality_passes_unless_the_category_scores_zero(
    category: str, passed: bool, name: str
) -> None:
    verdict = run(graded.factuality, judge({"reason": "r", "category": category}), "Paris.")
    assert verdict.status == ("pass" if passed else "fail")
    assert verdict.details["category_name"] == name
    assert verdict.reason.startswith(f"category {category} ({name})")


def test_factuality_category_scores_come_from_options() -> None:
    options = {"options": {"factuality": {"superset": 0, "subset": 0.8}}}
    superset = run(
        graded.factuality, judge({"reason": "r", "category": "B"}), "Paris.", options=options
    )
    subset = run(
        graded.factuality, judge({"reason": "r", "category": "A"}), "Paris.", options=options
    )
    assert superset.status == "fail"
    assert superset.score == 0
    assert subset.status == "pass"
    assert subset.score == 0.8


def test_factuality_request_is_schema_locked_to_the_five_categories() -> None:
    model = FakeProvider([{"reason": "r", "category": "C"}])
    run(graded.factuality, JudgeClient(model), "Sacramento is the capital.")
    request = model.requests[0]
    assert request.json_schema == rules.factuality_schema()
    assert request.json_schema["properties"]["category"]["enum"] == ["A", "B", "C", "D", "E"]
    assert list(request.json_schema["properties"]) == ["reason", "category"]
    text = "\n".join(m.content for m in request.messages)
    assert "Sacramento is the capital." in text
    assert "Paris is the capital of France." in text
    assert request.temperature == 0.0


def test_factuality_refuses_a_threshold() -> None:
    verdict = run(graded.factuality, judge(), "Paris.", threshold=0.5)
    assert verdict.status == "error"
    assert "options.factuality" in verdict.reason


def test_model_graded_factuality_is_the_same_type() -> None:
    verdict = run(graded.model_graded_factuality, judge({"reason": "r", "category": "D"}), "x")
    assert verdict.status == "fail"
    assert verdict.details["category"] == "D"


# --- model-graded-closedqa --------------------------------------------------------------------


@pytest.mark.parametrize(("answer", "status"), [("Y", "pass"), ("N", "fail")])
def test_closedqa_passes_on_y(answer: str, status: str) -> None:
    verdict = run(graded.closedqa, judge({"reason": "r", "answer": answer}), "names a city")
    assert verdict.status == status
    assert verdict.details["answer"] == answer


# --- errors, shared by every type -----------------------------------------------------------


JUDGED = [
    (graded.factuality, "Paris."),
    (graded.closedqa, "names a city"),
    (graded.g_eval, "is accurate"),
    (context_types.context_recall, "Paris is the capital."),
    (context_types.context_faithfulness, None),
    (context_types.context_relevance, None),
    (embedding.answer_relevance, None),
]


@pytest.mark.parametrize(("fn", "value"), JUDGED)
def test_a_judge_that_fails_is_an_error_not_a_fail(fn: Any, value: Any) -> None:
    failing = judge(ProviderError("model went away"), embeds=True)
    verdict = run(fn, failing, value, vars={"context": "Paris is the capital of France."})
    assert verdict.status == "error"
    assert "model went away" in verdict.reason


@pytest.mark.parametrize(("fn", "value"), JUDGED)
def test_a_reply_that_breaks_the_schema_twice_is_an_error(fn: Any, value: Any) -> None:
    bad = judge({"nonsense": 1}, {"nonsense": 2}, embeds=True)
    verdict = run(fn, bad, value, vars={"context": "Paris is the capital of France."})
    assert verdict.status == "error"
    assert "invalid after a repair retry" in verdict.reason


@pytest.mark.parametrize(("fn", "value"), JUDGED)
def test_no_judge_is_an_error(fn: Any, value: Any) -> None:
    verdict = run(fn, None, value, vars={"context": "Paris."})
    assert verdict.status == "error"


class Liar:
    """A Judge that ignores the schema it is sent."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply

    def complete_json(self, messages: Any, schema: Any, max_tokens: int) -> Any:
        return self.reply


@pytest.mark.parametrize(
    ("fn", "reply"),
    [
        (graded.factuality, {"reason": "r", "category": "F"}),
        (graded.closedqa, {"reason": "r", "answer": "maybe"}),
        (context_types.context_recall, units("SUPPORTED", "SUPPORTED")),
        (
            context_types.context_relevance,
            {"verdicts": [{"id": 1, "reason": "r", "verdict": "YES"}]},
        ),
    ],
)
def test_an_impossible_reply_is_an_error(fn: Any, reply: Any) -> None:
    verdict = run(fn, Liar(reply), "Paris is the capital.", vars={"context": "Paris is big."})
    assert verdict.status == "error"
    assert verdict.reason.startswith("judge reply is impossible")


# --- g-eval ---------------------------------------------------------------------------------

STEPS = {"steps": ["Read it.", "Check the facts.", "Decide."]}


def test_g_eval_asks_for_steps_then_a_score_out_of_ten() -> None:
    model = FakeProvider([STEPS, {"reason": "accurate", "score": 8}])
    verdict = run(graded.g_eval, JudgeClient(model), "is accurate")
    assert verdict.status == "pass"
    assert verdict.score == pytest.approx(0.8)
    steps_request, score_request = model.requests
    assert "Paris" not in "\n".join(m.content for m in steps_request.messages)
    assert "Check the facts." in "\n".join(m.content for m in score_request.messages)
    assert score_request.json_schema["properties"]["score"]["enum"] == list(range(11))


def test_g_eval_default_threshold_is_point_seven() -> None:
    verdict = run(graded.g_eval, judge(STEPS, {"reason": "so so", "score": 6}), "is accurate")
    assert verdict.status == "fail"
    assert "0.60 < 0.7" in verdict.reason


def test_g_eval_averages_a_list_of_criteria() -> None:
    replies = (STEPS, {"reason": "a", "score": 10}, STEPS, {"reason": "b", "score": 4})
    verdict = run(graded.g_eval, judge(*replies), ["is accurate", "is short"], threshold=0.7)
    assert verdict.score == pytest.approx(0.7)
    assert verdict.status == "pass"
    assert [c["score"] for c in verdict.details["criteria"]] == [10, 4]


# --- context-* ------------------------------------------------------------------------------


def test_context_faithfulness_scores_supported_claims_and_sets_aside_no_claims() -> None:
    output = "Hello! Paris is the capital of France. It has ten million bridges."
    reply = units("NO_CLAIM", "SUPPORTED", "NOT_SUPPORTED")
    verdict = run(
        context_types.context_faithfulness,
        judge(reply),
        output=output,
        vars={"context": "Paris is the capital of France.", "query": "Capital?"},
    )
    assert verdict.score == 0.5
    assert verdict.status == "pass"
    assert [v["text"] for v in verdict.details["verdicts"]] == rules.sentences(output)
    failing = run(
        context_types.context_faithfulness,
        judge(reply),
        output=output,
        threshold=0.9,
        vars={"context": "Paris is the capital of France."},
    )
    assert failing.status == "fail"
    assert "ten million bridges" in failing.reason


def test_context_recall_checks_each_sentence_of_the_value() -> None:
    model = FakeProvider([units("SUPPORTED", "NOT_SUPPORTED")])
    verdict = run(
        context_types.context_recall,
        JudgeClient(model),
        "Paris is the capital. It has a tower.",
        vars={"context": ["Paris is the capital of France."]},
        threshold=0.5,
    )
    assert verdict.score == 0.5
    assert verdict.status == "pass"
    schema = model.requests[0].json_schema
    assert schema["properties"]["verdicts"]["minItems"] == 2


def test_context_relevance_rules_on_each_chunk_of_a_list_context() -> None:
    context = ["Paris is the capital.", "Wine is made in France.", "It rains.", "Paris is big."]
    verdict = run(
        context_types.context_relevance,
        judge(units("NEEDED", "NOT_NEEDED", "NOT_NEEDED", "NOT_NEEDED")),
        vars={"context": context, "query": "What is the capital of France?"},
    )
    assert verdict.score == 0.25
    assert verdict.status == "fail"


def test_context_transform_result_wins_over_vars_context() -> None:
    model = FakeProvider([units("NEEDED")])
    run(
        context_types.context_relevance,
        JudgeClient(model),
        vars={"context": "from the vars"},
        context="from the transform",
    )
    text = "\n".join(m.content for m in model.requests[0].messages)
    assert "from the transform" in text
    assert "from the vars" not in text


@pytest.mark.parametrize(
    ("vars_", "message"),
    [({}, "no context"), ({"context": 3}, "must be a text or a list"), ({"context": " "}, "empty")],
)
def test_missing_or_malformed_context_is_an_error(vars_: dict[str, Any], message: str) -> None:
    verdict = run(context_types.context_relevance, judge(), vars=vars_)
    assert verdict.status == "error"
    assert message in verdict.reason


def test_too_many_sentences_for_one_call_is_an_error() -> None:
    context = " ".join(f"Fact {i}." for i in range(rules.MAX_UNITS + 1))
    verdict = run(context_types.context_relevance, judge(), vars={"context": context})
    assert verdict.status == "error"
    assert "at most" in verdict.reason


def test_sentences_split_lines_and_sentence_ends() -> None:
    assert rules.sentences("One. Two!\n\nThree? four\n3.5 stays") == [
        "One.",
        "Two!",
        "Three?",
        "four",
        "3.5 stays",
    ]


# --- select-best ----------------------------------------------------------------------------


def test_select_best_passes_the_chosen_output_only() -> None:
    model = FakeProvider([{"reason": "funnier", "best": 1}])
    checks = [
        Check(output=o, value="the funniest", judge=JudgeClient(model)) for o in ("a", "b", "c")
    ]
    verdicts = graded.select_best(checks)
    assert [v.status for v in verdicts] == ["fail", "pass", "fail"]
    assert model.requests[0].json_schema["properties"]["best"]["enum"] == [0, 1, 2]
    assert len(model.requests) == 1


def test_select_best_with_one_output_is_an_error() -> None:
    (verdict,) = graded.select_best([Check(output="a", value="best", judge=judge())])
    assert verdict.status == "error"
    assert "at least two outputs" in verdict.reason


def test_select_best_judge_failure_errs_every_output() -> None:
    checks = [Check(output=o, value="best", judge=judge(ProviderError("down"))) for o in "ab"]
    checks[1] = Check(output="b", value="best", judge=checks[0].judge)
    assert [v.status for v in graded.select_best(checks)] == ["error", "error"]


# --- embeddings -----------------------------------------------------------------------------


def test_similar_passes_close_texts_and_fails_far_ones() -> None:
    same = run(embedding.similar, judge(embeds=True), "Paris is the capital of France")
    far = run(embedding.similar, judge(embeds=True), "Bananas grow on trees")
    assert same.status == "pass"
    assert same.score == pytest.approx(1.0)
    assert far.status == "fail"
    assert far.details["threshold"] == 0.75


def test_similar_with_a_list_takes_the_closest_value() -> None:
    verdict = run(
        embedding.similar,
        judge(embeds=True),
        ["Bananas grow on trees", "Paris is the capital of France"],
    )
    assert verdict.status == "pass"
    assert verdict.details["best"] == 1


def test_similar_threshold_is_the_bar() -> None:
    text = "Paris is the capital of Italy"
    cos = embedding.cosine(word_vector("Paris is the capital of France."), word_vector(text))
    below = run(embedding.similar, judge(embeds=True), text, threshold=cos + 0.01)
    at = run(embedding.similar, judge(embeds=True), text, threshold=cos)
    assert below.status == "fail"
    assert at.status == "pass"


def test_similar_euclidean_threshold_is_a_largest_distance() -> None:
    verdict = run(
        embedding.similar_euclidean,
        judge(embeds=True),
        "Paris is the capital of France",
        threshold=0.1,
    )
    assert verdict.status == "pass"
    assert verdict.details["values"] == [0.0]


def test_a_judge_that_cannot_embed_is_an_error_naming_the_provider() -> None:
    verdict = run(embedding.similar, judge(), "Paris")
    assert verdict.status == "error"
    assert verdict.reason == "provider fake cannot embed"


def test_answer_relevance_compares_generated_questions_with_the_query() -> None:
    questions = {"questions": ["What is the capital of France?"] * 3}
    verdict = run(
        embedding.answer_relevance,
        judge(questions, embeds=True),
        vars={"query": "What is the capital of France?"},
    )
    assert verdict.status == "pass"
    assert verdict.score == pytest.approx(1.0)
    off = {"questions": ["Do bananas grow on trees?"] * 3}
    verdict = run(embedding.answer_relevance, judge(off, embeds=True), threshold=0.5)
    assert verdict.status == "fail"
    assert verdict.details["questions"] == off["questions"]


def test_an_output_without_claims_is_faithful() -> None:
    verdict = run(
        context_types.context_faithfulness,
        judge(units("NO_CLAIM")),
        output="Happy to help!",
        vars={"context": "Paris is the capital of France."},
    )
    assert verdict.status == "pass"
    assert verdict.score == 1
    assert "every sentence was NO_CLAIM" in verdict.reason
