"""``python -m truescore_fast`` runs the command line."""

from truescore_fast.cli import main

raise SystemExit(main())
