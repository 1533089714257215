"""The JavaScript worker: a separate process that runs users' JavaScript in QuickJS.

Started by :mod:`skilleval.sandbox.jsengine` as ``python -I _jsworker.py`` and spoken to in JSON
lines on stdin and stdout. It imports nothing from skilleval, so that it starts in tens of
milliseconds, and it never prints anything but its replies.

Each request gets a fresh QuickJS context (no state passes from one check to the next) with a
memory limit and a CPU-time limit. QuickJS's own limit counts the CPU time of this process
only, which is why the code runs here and not in skilleval's (where the model's threads would
count too). What QuickJS cannot interrupt (a backtracking regular expression) the parent ends
by killing this process at its wall-clock deadline.

A request: ``{"params": [...], "body": "...", "call": "function" | "module", "name": ...,
"args": "<JSON array>", "time": seconds, "memory": bytes}``. The body becomes
``new Function(...params, body)``; for ``module`` it is a CommonJS file run with ``module``
and ``exports`` and the function is taken from its exports. A reply: ``{"ok": true, "result":
{...}, "logs": [...]}`` or ``{"ok": false, "kind": ..., "error": ..., "logs": [...]}``.
"""

import contextlib
import json
import os
import resource
import sys
import time
from typing import Any

try:
    import _quickjs
except ImportError:  # every request is answered with the reason
    _quickjs = None

MISSING = "the quickjs package is not installed (pip install quickjs)"

ADDRESS_SPACE = 1 << 30
"""A ceiling on this process's memory as a whole, beside QuickJS's own (much lower) limit."""

# Runs before the user's code in each context: console (kept, returned with the reply), the
# few ES2022-2023 methods this QuickJS lacks and promptfoo configs use, and the driver.
PRELUDE = r"""
var __skilleval_logs = [];
var __skilleval_keep = {stringify: JSON.stringify, string: String};
(function () {
  var kept = 0;
  function text(v) {
    if (typeof v === 'string') return v;
    try { var s = JSON.stringify(v); return s === undefined ? String(v) : s; }
    catch (e) { return String(v); }
  }
  function log() {
    if (kept >= 100) return;
    kept++;
    __skilleval_logs.push(Array.prototype.map.call(arguments, text).join(' ').slice(0, 2000));
  }
  globalThis.console = {log: log, info: log, warn: log, error: log, debug: log, trace: log};
  function define(proto, name, fn) {
    if (!(name in proto)) {
      Object.defineProperty(proto, name, {value: fn, writable: true, configurable: true});
    }
  }
  function at(i) {
    var n = this.length, k = Math.trunc(i) || 0;
    if (k < 0) k += n;
    return k < 0 || k >= n ? undefined : this[k];
  }
  define(Array.prototype, 'at', at);
  define(String.prototype, 'at', at);
  define(Object, 'hasOwn', function (o, k) { return Object.prototype.hasOwnProperty.call(o, k); });
  define(Array.prototype, 'findLast', function (f, t) {
    for (var i = this.length - 1; i >= 0; i--) if (f.call(t, this[i], i, this)) return this[i];
    return undefined;
  });
  define(Array.prototype, 'findLastIndex', function (f, t) {
    for (var i = this.length - 1; i >= 0; i--) if (f.call(t, this[i], i, this)) return i;
    return -1;
  });
})();
var __skilleval_state = {settled: false};
function __skilleval_run(params, body, call, name, args) {
  var fn;
  try {
    fn = Function.apply(null, params.concat([body]));
  } catch (e) {
    // The code does not compile: told apart from a SyntaxError it throws when it runs.
    __skilleval_state = {settled: true, compile: e};
    return;
  }
  if (call === 'define') {
    __skilleval_state = {settled: true, value: true};
    return;
  }
  if (call === 'module') {
    var module = {exports: {}};
    fn(module, module.exports);
    var exported = module.exports;
    if (name) {
      fn = exported == null ? undefined : exported[name];
      if (typeof fn !== 'function') {
        __skilleval_state = {settled: true, bad: 'the file exports no function ' + JSON.stringify(name)};
        return;
      }
    } else if (typeof exported === 'function') {
      fn = exported;
    } else if (exported && typeof exported.default === 'function') {
      fn = exported.default;
    } else {
      __skilleval_state = {settled: true, bad: 'the file must export a function (module.exports = function ...)'};
      return;
    }
  }
  var result = fn.apply(undefined, JSON.parse(args));
  if (result && typeof result.then === 'function') {
    Promise.resolve(result).then(
      function (v) { __skilleval_state = {settled: true, value: v}; },
      function (e) { __skilleval_state = {settled: true, error: e}; });
  } else {
    __skilleval_state = {settled: true, value: result};
  }
}
function __skilleval_reply() {
  // Built by hand with the functions kept before the user's code ran: code that replaces
  // JSON.stringify or String, or adds a toJSON to Object.prototype, cannot change the reply's
  // shape (a primitive string never consults toJSON).
  var q = __skilleval_keep.stringify, str = __skilleval_keep.string;
  function reply(kind, fields) {
    var out = '{"kind":' + q(kind);
    for (var k in fields) {
      if (Object.prototype.hasOwnProperty.call(fields, k)) out += ',' + q(k) + ':' + q(str(fields[k]));
    }
    return out + '}';
  }
  var s = __skilleval_state;
  if (!s.settled) return reply('pending', {});
  if (s.bad) return reply('bad', {message: s.bad});
  if (s.compile) {
    return reply('compile', {message: s.compile.message || s.compile, stack: s.compile.stack || ''});
  }
  if ('error' in s) {
    var e = s.error;
    var message = e && e.name ? e.name + ': ' + e.message : e;
    return reply('rejected', {message: message, stack: e && e.stack ? e.stack : ''});
  }
  var v = s.value;
  if (v === undefined) return reply('undefined', {});
  if (typeof v === 'number' && !isFinite(v)) return reply('nonfinite', {text: v});
  if (typeof v === 'bigint') return '{"kind":"value","value":' + q(Number(v)) + '}';
  if (typeof v === 'function' || typeof v === 'symbol') return reply('bad', {message: 'returned a ' + typeof v});
  var text;
  try {
    text = q(v);
  } catch (e) {
    return reply('bad', {message: 'returned a value that cannot be written as JSON (' + (e && e.message) + ')'});
  }
  if (typeof text !== 'string') return reply('bad', {message: 'returned a value that cannot be written as JSON'});
  return '{"kind":"value","value":' + text + '}';
}
"""


def _kind_of(exc: BaseException, text: str, ctx: Any, limit: int) -> str:
    if isinstance(exc, _quickjs.StackOverflow) or "stack overflow" in text:
        return "stack"
    if text.startswith("InternalError: interrupted"):
        return "timeout"
    if "out of memory" in text:
        return "memory"
    # With no memory left QuickJS cannot build an error and throws null; so does `throw null`.
    # Only a heap at its limit tells the two apart.
    if text.strip() in ("", "null") and _near_limit(ctx, limit):
        return "memory"
    return "throw"


def _near_limit(ctx: Any, limit: int) -> bool:
    try:
        return bool(ctx.memory()["malloc_size"] > 0.9 * limit)
    except Exception:
        return False


def _logs(ctx: Any) -> list[str]:
    try:
        text = ctx.eval("__skilleval_keep.stringify(__skilleval_logs)")
        return [str(x)[:2000] for x in json.loads(text)][:100]
    except Exception:
        return []


def fresh() -> Any:
    """A new context with the prelude run: built while the parent reads the last reply."""
    ctx = _quickjs.Context()
    ctx.eval(PRELUDE)
    return ctx


def handle(request: dict[str, Any], ctx: Any) -> dict[str, Any]:
    started = time.monotonic()
    limit = float(request["time"])
    ctx.set_memory_limit(int(request["memory"]))
    ctx.set_time_limit(limit)
    ctx.set("__skilleval_params", json.dumps(request["params"]))
    ctx.set("__skilleval_body", request["body"])
    ctx.set("__skilleval_name", request.get("name") or "")
    ctx.set("__skilleval_args", request["args"])
    ctx.set("__skilleval_call", request["call"])
    try:
        ctx.eval(
            "__skilleval_run(JSON.parse(__skilleval_params), __skilleval_body,"
            " __skilleval_call, __skilleval_name, __skilleval_args)"
        )
        while ctx.execute_pending_job():
            if time.monotonic() - started > limit:
                return {"ok": False, "kind": "timeout", "error": "interrupted", "logs": _logs(ctx)}
        reply = json.loads(ctx.eval("__skilleval_reply()"))
    except Exception as exc:
        text = str(exc)
        kind = _kind_of(exc, text, ctx, int(request["memory"]))
        return {"ok": False, "kind": kind, "error": text, "logs": _logs(ctx)}
    return {"ok": True, "result": reply, "logs": _logs(ctx)}


def die_with_parent() -> None:
    """Ask the kernel to kill this process when skilleval ends, however it ends (even by
    SIGKILL): a worker stuck in a backtracking regex would otherwise run on forever. The
    parent's id comes as the first argument; if it is gone already, so is this worker."""
    parent = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else None
    with contextlib.suppress(OSError, AttributeError):
        import ctypes  # only here: the one use

        pr_set_pdeathsig, sigkill = 1, 9
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, sigkill, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        os._exit(0)


def main() -> None:
    die_with_parent()
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    spare = fresh() if _quickjs is not None else None
    for line in sys.stdin:
        if _quickjs is None:
            reply = {"ok": False, "kind": "worker", "error": MISSING, "logs": []}
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
            continue
        ctx = None
        try:
            ctx, spare = spare if spare is not None else fresh(), None
            reply = handle(json.loads(line), ctx)
        except MemoryError:
            reply = {"ok": False, "kind": "memory", "error": "out of memory", "logs": []}
        except Exception as exc:
            reply = {
                "ok": False,
                "kind": "worker",
                "error": f"{type(exc).__name__}: {exc}",
                "logs": [],
            }
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        ctx = None  # freed after the reply is out, not while the parent waits
        spare = fresh()


if __name__ == "__main__":
    main()
