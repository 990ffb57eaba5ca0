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


#: The grid-command scenario at the smallest workload scale (a few hundred tasks a segment)
#: with a small, fast learner: cells of a fraction of a second (results mean nothing; mechanics do).
COMMAND_SCENARIO = {"regime": "none", "slot_s": 0.1, "defer_s": 0.3,
                    "run": {"workload": {"scale": 0.002}, "fleet": {"servers": 6},
                            "ppo": {"n_steps": 64, "batch_size": 32, "n_epochs": 1, "hidden": 16},
                            "oinpt": {"bc_epochs": 2, "critic_epochs": 2}}}


def write_command_profile(path: Path, scenario: dict | None = None, **fields) -> Path:
    """A grid-command grid profile YAML at ``path`` named after its stem: two experts on 6
    servers, seeds 0 and 1 (4 cells), on :data:`COMMAND_SCENARIO` (written beside it, updated by
    ``scenario``), with ``fields``."""
    scenario_path = path.with_name(f"{path.stem}-scenario.yaml")
    scenario_path.write_text(yaml.safe_dump({**COMMAND_SCENARIO, **(scenario or {})}))
    data = {"name": path.stem, "scale": "smoke", "scenario": str(scenario_path), "methods": ["rule", "lyapunov"],
            "servers": [6], "seeds": [0, 1], "train_regime": "shallow-long", "eval_regime": "deep-short",
            "pipeline": {"every": 40, "window": 20}, **fields}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
