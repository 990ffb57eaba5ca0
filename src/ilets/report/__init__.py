"""What the study shows: statistics, claim verdicts, findings, deviations, plots.

``stats`` (one seed-level resampler), ``verdicts`` (the paper's claims), ``events`` (where the
workload's events fall), ``report_context`` and ``findings`` (what each chapter states),
``deviations``, ``calibration``, ``plots``. The top layer: nothing below imports it.
"""
