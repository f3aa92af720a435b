"""The pytest-free kernel every other package builds on: the config models
(:mod:`.config`), every exception (:mod:`.errors`), the records that travel
between stages (:mod:`.records`, :mod:`.results`), the input and output path
checks (:mod:`.paths`) and the shared statistics (:mod:`.stats`)."""
