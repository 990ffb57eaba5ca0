"""Running the study: profiles, one cell, the grid, the results store, the pilot, the CLI.

``profiles``, ``run`` (one cell to an atomic folder), ``grid`` (resumable, local or SLURM),
``results`` (the parquet store), ``pilot`` (the tuning rule), ``shipping`` (committed copies
of results), ``verify`` (re-running shipped cells), ``latency`` and ``expert_tables``
(measurements), ``book_measurements`` (the measurements the book quotes, recorded once), ``cli``
(the ``ilets`` command). Imports the agents and the layers below.
"""
