"""promptfoo's config format, read with promptfoo's meaning.

``suite/`` holds skilleval's own format; this package holds what a promptfoo config means
where it differs: what marks a config as promptfoo's (:mod:`.config`), its provider ids
(:mod:`.provider_ids`) and graders (:mod:`.graders`), how its templates print values
(:mod:`.rendering`), how its assertion values read (:mod:`.values`), where skilleval reads
it otherwise (:mod:`.differences`), and ``skilleval import promptfoo`` (:mod:`.importer`).
The suite loader consults it; it imports nothing of the suite.
"""
