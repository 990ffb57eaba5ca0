"""What the study shows: statistics, claim verdicts, findings, deviations, plots.

``stats`` (one seed-level resampler), ``verdicts`` (the paper's claims), ``events`` (where the
workload's events fall), ``report_context`` and ``findings`` (what each chapter states),
``deviations``, ``parameters`` (chapter 2's table from the config's field docs), ``measurements``
(the book's recorded measurements, read), ``plots``. The top layer: nothing below imports it.
"""
