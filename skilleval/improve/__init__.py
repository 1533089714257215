"""``skilleval improve``: accept a skill edit only on held-out evidence.

Modules, one concern each:

* :mod:`~skilleval.improve.split`: the train, selection and confirmation sets.
* :mod:`~skilleval.improve.candidates`: candidates from a folder or from a proposer's edit.
* :mod:`~skilleval.improve.proposer`: the proposer's prompt, schema and call.
* :mod:`~skilleval.improve.evaluate`: one skill run on the tests, through ``run_suite``.
* :mod:`~skilleval.improve.choice`: screening on train, choosing on selection.
* :mod:`~skilleval.improve.rule`: the acceptance rule and the sizes a decision needs.
* :mod:`~skilleval.improve.simulate`: the false-acceptance simulation.
* :mod:`~skilleval.improve.meter`: the calls a model answered, counted under the cache.
* :mod:`~skilleval.improve.guards`: copied test text, lint and the overfitting judge.
* :mod:`~skilleval.improve.state`: the sealed state file a killed run resumes from.
* :mod:`~skilleval.improve.loop`: the rounds.
* :mod:`~skilleval.improve.run`: one command's models, loop and written files.
* :mod:`~skilleval.improve.report_json`, :mod:`~skilleval.improve.report_html`,
  :mod:`~skilleval.improve.terminal`: the report.
"""
