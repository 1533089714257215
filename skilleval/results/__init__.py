"""The typed results of a run (:class:`~skilleval.results.model.Run`), written by
:mod:`skilleval.results.write` and read back by :mod:`skilleval.results.load`.

This layer knows nothing of suites being run: the runner builds a ``Run``; reports, ``compare``
and ``watch`` read one.
"""
