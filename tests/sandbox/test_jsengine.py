"""The JavaScript sandbox: promptfoo's inline rule, results, errors with lines, limits, escapes.

The limits are lowered so that the runaway cases stay short; the tests assert what happens,
not how long it takes.
"""

from __future__ import annotations

import datetime
import math
import sys

import pytest

from skilleval.sandbox import jsengine, jspool
from skilleval.sandbox.jsengine import JsError, JsFailure, call_inline, call_module, inline_body


@pytest.fixture
def short_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsengine, "TIME_LIMIT_S", 0.3)
    monkeypatch.setattr(jsengine, "MEMORY_LIMIT", 16 * 1024 * 1024)


def failure_of(code: str, output: object = "text") -> JsFailure:
    outcome = call_inline(code, [output, {}])
    assert outcome.failure is not None, outcome
    return outcome.failure


@pytest.mark.parametrize(
    ("value", "body"),
    [
        ("output.length < 200", "return output.length < 200"),
        ("output.length < 200;;  ", "return output.length < 200"),
        ("const n = output.length; n < 9", "const n = output.length; return n < 9"),
        ("let s = 'a;b'; s === output;", "let s = 'a;b'; return s === output"),
        ("const f = (x) => { return x; }; f(1)", "const f = (x) => { return x; }; return f(1)"),
        ("const x = 1", "const x = 1"),
        ("if (a) {\n  return 1;\n}\nreturn 0;\n\n", "if (a) {\n  return 1;\n}\nreturn 0;"),
        ("output === 'true'\n", "return output === 'true'"),
    ],
)
def test_inline_values_become_bodies_by_promptfoos_rule(value: str, body: str) -> None:
    assert inline_body(value) == body


def test_values_of_each_json_kind_come_back() -> None:
    assert call_inline("output.length", ["abc", {}]).value == 3
    assert call_inline("context.vars.n * 2", ["", {"vars": {"n": 4}}]).value == 8
    assert call_inline("({pass: true, score: 0.5})", ["", {}]).value == {"pass": True, "score": 0.5}
    assert call_inline("[output, null]", ["x", {}]).value == ["x", None]
    assert call_inline("output.a.b", [{"a": {"b": "deep"}}, {}]).value == "deep"


def test_undefined_is_told_apart_from_null() -> None:
    assert call_inline("undefined", ["", {}]).undefined
    nulled = call_inline("null", ["", {}])
    assert not nulled.undefined
    assert nulled.value is None


def test_non_finite_numbers_come_back_as_floats() -> None:
    assert math.isnan(call_inline("0 / 0", ["", {}]).value)
    assert call_inline("-1 / 0", ["", {}]).value == float("-inf")


def test_promises_are_awaited() -> None:
    resolved = call_inline("Promise.resolve(output.length)", ["abcd", {}])
    assert resolved.value == 4
    async_body = "const wait = async () => output.toUpperCase();\nreturn await wait();"
    assert call_inline(f"return (async () => {{\n{async_body}\n}})();", ["hi", {}]).value == "HI"


def test_a_promise_that_never_settles_is_a_failure() -> None:
    failure = failure_of("new Promise(() => {})")
    assert failure.kind == "result"
    assert "never settled" in failure.message


def test_a_rejected_promise_is_a_throw_at_its_line() -> None:
    failure = failure_of("return (async () => {\n  throw new Error('late');\n})();")
    assert (failure.kind, failure.message, failure.line) == ("throw", "Error: late", 2)


def test_console_output_is_kept() -> None:
    outcome = call_inline("console.log('seen', {n: 1});\nreturn true;", ["", {}])
    assert outcome.logs == ('seen {"n":1}',)


def test_methods_this_quickjs_lacks_are_supplied() -> None:
    assert call_inline("[1, 2, 3].at(-1)", ["", {}]).value == 3
    assert call_inline("output.at(0)", ["xy", {}]).value == "x"
    assert call_inline("Object.hasOwn({a: 1}, 'a')", ["", {}]).value is True
    assert call_inline("[1, 2, 3].findLast((x) => x < 3)", ["", {}]).value == 2


def test_syntax_errors_name_the_line_of_the_value() -> None:
    failure = jsengine.check_inline("const a = 1;\nconst b = ;\nreturn a;")
    assert failure is not None
    assert (failure.kind, failure.line) == ("syntax", 2)
    assert jsengine.check_inline("output.length < 200") is None


def test_an_unclosed_bracket_is_reported_on_the_last_line() -> None:
    failure = jsengine.check_inline("output.includes('a'")
    assert failure is not None
    assert failure.line == 1
    assert "ends early" in failure.message


def test_checking_syntax_does_not_run_the_code() -> None:
    assert jsengine.check_inline("while (true) {}\nreturn 1;") is None


def test_a_throw_names_its_line() -> None:
    failure = failure_of("const x = null;\n\nreturn x.length;")
    assert (failure.kind, failure.line) == ("throw", 3)
    assert failure.message.startswith("TypeError")
    described = failure.describe("suite.yaml:4:9", inline=True)
    assert described == (
        "JavaScript at suite.yaml:4:9, line 3 of the value threw "
        "TypeError: cannot read property 'length' of null"
    )


def test_a_thrown_non_error_value_is_reported() -> None:
    assert failure_of("throw 'plain'\nreturn 1;").message == "plain"


# --- files ----------------------------------------------------------------------------------


def test_a_module_exports_its_function() -> None:
    source = "module.exports = (output, context) => output.length > context.config.n;"
    assert call_module(source, None, ["abcd", {"config": {"n": 2}}]).value is True


def test_a_named_export_and_a_default_export() -> None:
    source = "exports.short = (o) => o.length < 3;\nexports.default = () => 'd';"
    assert call_module(source, "short", ["ab", {}]).value is True
    assert call_module(source, None, ["ab", {}]).value == "d"


def test_a_module_without_the_function_says_so() -> None:
    named = call_module("module.exports = {a: () => 1};", "b", ["", {}]).failure
    assert named is not None
    assert named.message == 'the file exports no function "b"'
    none = call_module("module.exports = 3;", None, ["", {}]).failure
    assert none is not None
    assert "must export a function" in none.message


def test_a_throw_in_a_module_names_the_file_line() -> None:
    source = "function check(output) {\n  return missing(output);\n}\nmodule.exports = check;"
    failure = call_module(source, None, ["", {}]).failure
    assert failure is not None
    assert failure.describe("check.js") == (
        "JavaScript at check.js:2 threw ReferenceError: 'missing' is not defined"
    )


def test_a_module_syntax_error_is_found_without_running_it() -> None:
    assert jsengine.check_module("module.exports = () => {\n  return 1 +;\n};") is not None
    assert jsengine.check_module("while (true) {}") is None


# --- the sandbox ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("require('fs').readFileSync('/etc/passwd')", "ReferenceError: 'require' is not defined"),
        ("process.exit(1)", "ReferenceError: 'process' is not defined"),
        ("fetch('http://127.0.0.1:9/')", "ReferenceError: 'fetch' is not defined"),
        (
            "this.constructor.constructor('return process')().exit(1)",
            "ReferenceError: 'process' is not defined",
        ),
        (
            "Function('return this')().process.pid",
            "TypeError: cannot read property 'pid' of undefined",
        ),
        (
            "import('fs').then((fs) => fs.readFileSync('/etc/passwd'))",
            "ReferenceError: could not load module 'fs'",
        ),
        ("setTimeout(() => 1, 0)", "ReferenceError: 'setTimeout' is not defined"),
        ("new XMLHttpRequest()", "ReferenceError: 'XMLHttpRequest' is not defined"),
        ("std.open('/etc/passwd', 'r')", "ReferenceError: 'std' is not defined"),
        ("os.exec(['true'])", "ReferenceError: 'os' is not defined"),
    ],
)
def test_no_way_out_of_the_sandbox(code: str, message: str) -> None:
    failure = failure_of(code)
    assert failure.kind == "throw"
    assert failure.message == message


def test_no_host_objects_on_the_global() -> None:
    names = call_inline("Object.getOwnPropertyNames(globalThis)", ["", {}]).value
    assert not {"require", "process", "fetch", "os", "std", "module", "WebAssembly"} & set(names)


def test_nothing_one_call_leaves_is_seen_by_the_next() -> None:
    assert call_inline("globalThis.leak = 1;\nreturn 1;", ["", {}]).value == 1
    assert call_inline("typeof leak", ["", {}]).value == "undefined"


@pytest.mark.usefixtures("short_limits")
def test_a_runaway_loop_is_stopped() -> None:
    assert failure_of("while (true) {}\nreturn 1;").kind == "timeout"


@pytest.mark.usefixtures("short_limits")
def test_an_endless_chain_of_promises_is_stopped() -> None:
    code = "const spin = async () => { for (;;) await null; };\nreturn spin();"
    assert failure_of(code).kind == "timeout"


@pytest.mark.usefixtures("short_limits")
def test_a_backtracking_regex_is_stopped_and_the_next_call_works() -> None:
    assert failure_of("/(a+)+$/.test('a'.repeat(40) + 'b')").kind == "timeout"
    assert call_inline("1 + 1", ["", {}]).value == 2


@pytest.mark.usefixtures("short_limits")
@pytest.mark.parametrize(
    "code",
    [
        "const hoard = [];\nwhile (true) hoard.push('x'.repeat(1 << 16) + hoard.length);",
        "let s = 'x';\nwhile (true) s += s;",
        "const b = [];\nfor (;;) b.push(new Uint8Array(1 << 22).fill(1));",
    ],
    ids=["strings", "doubling", "typed-arrays"],
)
def test_a_memory_bomb_is_stopped(code: str) -> None:
    failure = failure_of(code)
    assert failure.kind == "memory"
    assert failure.describe("x.yaml:1:1", inline=True).endswith("ran out of memory (limit 16 MiB)")


def test_deep_recursion_is_an_error() -> None:
    assert failure_of("function f() { return f(); }\nreturn f();").kind == "stack"


def test_arguments_json_cannot_hold_are_a_failure() -> None:
    failure = failure_of("1", output=float("nan"))
    assert failure.kind == "worker"
    assert "not JSON" in failure.message


def test_other_values_are_passed_as_text() -> None:
    """YAML dates, for example, reach the code as their ISO text."""
    when = datetime.date(2024, 1, 2)
    assert call_inline("output", [when, {}]).value == "2024-01-02"


# --- derived metrics ------------------------------------------------------------------------


def test_a_number_from_named_numbers() -> None:
    names = {"precision": 0.5, "recall": 1.0, "pass rate": 0.25}
    formula = "2 * precision * recall / (precision + recall) + namedScores['pass rate']"
    assert jsengine.evaluate_number(formula, names) == pytest.approx(2 / 3 + 0.25)


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("a / 0", "not a finite number"),
        ("'x'", "not a number"),
        ("missing + 1", "'missing' is not defined"),
        ("a +", "syntax error"),
    ],
)
def test_a_formula_that_gives_no_number_raises(formula: str, message: str) -> None:
    with pytest.raises(JsError, match=message):
        jsengine.evaluate_number(formula, {"a": 1.0})


def test_without_quickjs_each_call_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # -S: no site-packages, so the worker cannot import quickjs.
    monkeypatch.setattr(jspool, "WORKER_COMMAND", [*jspool.WORKER_COMMAND, "-S"])
    monkeypatch.setattr(jspool, "_idle", [])
    try:
        failure = failure_of("1")
    finally:
        jspool.close_all()  # the workers of this test, before the real pool is back
    assert failure.kind == "worker"
    assert failure.describe("check.js") == (
        "JavaScript at check.js could not run: the quickjs package is not installed"
        " (pip install quickjs)"
    )


def _with_worker(monkeypatch: pytest.MonkeyPatch, code: str) -> jsengine.JsOutcome:
    """Call through a worker that runs ``code`` instead of the real one."""
    jspool.close_all()
    monkeypatch.setattr(jspool, "WORKER_COMMAND", [sys.executable, "-c", code])
    try:
        return jsengine.call_inline("1", [])
    finally:
        jspool.close_all()


def test_a_worker_that_dies_is_reported_as_dying_not_as_a_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # It closes its output first and dies a moment later, as a worker the kernel's
    # out-of-memory killer takes does: no reply, and no exit status yet when the pipe ends.
    slow = "import os, signal, time; os.close(1); time.sleep(0.3); os.kill(os.getpid(), 9)"
    failure = _with_worker(monkeypatch, slow).failure
    assert failure is not None
    assert (failure.kind, failure.message) == (
        "worker",
        "the worker process ended unexpectedly (killed by signal 9)",
    )
    failure = _with_worker(monkeypatch, "import sys; sys.exit(3)").failure
    assert failure is not None
    assert failure.message == "the worker process ended unexpectedly (exit status 3)"


def test_a_reply_of_the_wrong_shape_is_a_failure_not_an_exception() -> None:
    for reply in ({"ok": True, "result": "x"}, {"ok": True, "result": [1]}, [1], "x", None):
        outcome = jsengine.read_reply(reply)
        assert outcome.failure is not None


def test_throw_null_is_a_throw_and_a_full_heap_is_out_of_memory(short_limits: None) -> None:
    thrown = jsengine.call_inline("var x = 1;\nthrow null", ["out"])
    assert thrown.failure is not None
    assert (thrown.failure.kind, thrown.failure.message) == ("throw", "null")
    bomb = "var a = [];\nwhile (true) a.push(new Array(100000).fill(1));"
    full = jsengine.call_inline(bomb, ["out"])
    assert full.failure is not None
    assert full.failure.kind == "memory"
