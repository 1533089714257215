"""``skilleval cases``: a run's failures written as candidate tests.

:mod:`.source` finds the run's records (streamed) and the suite it ran, :mod:`.collect` turns
failing records into candidate cases and notes, :mod:`.overlap` checks each candidate against
the suite with lint's word n-gram checks, :mod:`.paths` rewrites relative paths for another
folder, :mod:`.emit` writes the cases as YAML, alone or as a complete suite that keeps the
source suite's settings, and :mod:`.build` puts these together for the command. The suite
itself is never edited.
"""
