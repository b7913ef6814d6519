"""``python -m truescore_fast.cli`` runs the command line, as ``python -m truescore_fast``
does."""

# The guard matters: a process pool or a local Dask cluster started by the command line
# imports this module again in each worker (the "spawn" start method), where it must not
# run the command line a second time.
if __name__ == "__main__":
    from truescore_fast.cli import main

    raise SystemExit(main())
