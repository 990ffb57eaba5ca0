"""The tiny profile the grid, fault and signal tests write: cells of a second or two."""

from __future__ import annotations

from pathlib import Path

import yaml

TINY_RUN = {"curve_every": 20, "workload": {"scale": 0.001},
            "ppo": {"n_steps": 32, "batch_size": 16, "n_epochs": 1, "hidden": 16}}


def write_profile(path: Path, **fields) -> Path:
    """A profile YAML at ``path`` named after its stem, on :data:`TINY_RUN`, with ``fields``."""
    data = {"name": path.stem, "description": f"test profile {path.stem}", "run": TINY_RUN, **fields}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
