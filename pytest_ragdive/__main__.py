"""``python -m pytest_ragdive``: the command line (see :mod:`pytest_ragdive.cli`)."""

from .cli import main

raise SystemExit(main())
