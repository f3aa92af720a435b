"""Everything that imports pytest: the hooks (:mod:`.hooks`, the ``ragdive`` pytest11
entry point), the option table (:mod:`.options`), the role this process plays
(:mod:`.controller`), the session's state (:mod:`.session`), the items
(:mod:`.items`), what an item says (:mod:`.item_report`), progress and Ctrl-C
(:mod:`.progress`, :mod:`.interrupts`).

Importing this package costs nothing: the hooks module imports only pytest and the
option table, and every other module is imported when a run is active."""
