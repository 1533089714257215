"""Code and patterns a suite's author wrote, run under limits: limits in, verdict or error out.

Everything skilleval runs that it did not write goes through this package, and each entry
point keeps one contract: the caller states the limits (or takes the module's default), and
gets back either a value describing what happened or an error from :mod:`skilleval.errors`.
Nothing the user's code does (a loop, a throw, ``sys.exit``, a stray ``print``, a
catastrophic pattern, a process that will not die) escapes as anything else, and nothing it
starts outlives skilleval. The one exception on purpose is :func:`.pyfile.import_file`, which
passes on what a module raises while it is imported; its callers turn that into an ``error``
verdict or a diagnostic.

=================  =============================  ==========================================
module             limits in                      out
=================  =============================  ==========================================
:mod:`.jsengine`   CPU time and heap per call     :class:`~.jsengine.JsOutcome`: a result,
                   (``TIME_LIMIT_S``,             or a :class:`~.jsengine.JsFailure` (syntax
                   ``MEMORY_LIMIT``), a wall-     error, throw, limit) at the user's line;
                   clock deadline, a worker       :class:`~.jsengine.JsError` only from
                   process per call               ``evaluate_number``
:mod:`.usercode`   a wall-clock limit per call,   :class:`~.usercode.Called`: the value, the
                   stdout sent to stderr          exception raised (``SystemExit``
                                                  included) or ``timed_out``;
                                                  :func:`~.usercode.raised_at` names the line
:mod:`.pyfile`     regular files under the size   the imported module, or
                   cap, fresh compilation,        :class:`~skilleval.errors.SuiteError` /
                   ``no_user_imports()``          :class:`~skilleval.errors.PluginError` at
                                                  the file's line
:mod:`.process`    a timeout and an output cap,   :class:`~.process.ProcessResult`: exit
                   a process group of its own     code, output, ``timed_out``,
                                                  ``truncated`` or why it could not start
:mod:`.saferegex`  a search time limit            a match or None, or
                   (``TIMEOUT_S``), a cap on      :class:`~skilleval.errors.RegexError` /
                   compiled repeats               :class:`~skilleval.errors.RegexTimeoutError`
                   (``MAX_EXPANDED``)
=================  =============================  ==========================================

Only JavaScript is isolated: its context has no file system, network or process at all.
Python code and commands run with the rights of the user running skilleval (docs/agentic.md:
command tools are not a sandbox); what this package bounds for them is time, output and
lifetime, and what they may raise.

The JavaScript runs in worker processes (:mod:`.jspool` keeps them; :mod:`._jsworker` is the
worker's script, importing nothing from skilleval). Python code runs in skilleval's process,
guarded by :mod:`.usercode`.

The package knows nothing of suites, runs or reports: a caller turns an outcome into a
verdict, a diagnostic or a tool result. It sits below the foundations (``plugins``,
``expr``) and above ``util`` in the layer contract (pyproject.toml).
"""
