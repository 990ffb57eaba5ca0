"""Policies that can be taken away: weights plus a small JSON of what they read, nothing pickled.

A policy folder holds ``policy.json`` (the network, the observation layout and, for a flat
policy, the fleet size its input was built for) and ``policy.pt``, a state dict of tensors
that :func:`load_policy` reads with ``torch.load(weights_only=True)``, so loading runs no code
(SB3's ``model.zip`` unpickles). The per-server policy loads onto any fleet size; a flat
policy only onto the fleet size it was trained on, and the error says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch as th

from ilets.config import POLICY_LAYOUTS, ConfigError

#: bump when the folder's format changes
FORMAT = 1


class PolicyLoadError(ConfigError):
    """A policy folder that cannot serve the run it is loaded for (names file and field)."""


def save_policy(model, folder: Path, policy: str, layout: str, servers: int,
                state: dict[str, th.Tensor] | None = None) -> None:
    """Write ``model.policy``'s weights (or ``state``, a state dict of the same network) and
    its description into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"format": FORMAT, "policy": policy, "layout": layout, "servers": servers}
    if policy == "per-server":
        net = model.policy.mlp_extractor
        meta.update(n_task=net.n_task, width=net.width, hidden=net.hidden)
        if net.later is not None:  # only when set: folders saved before it existed read the same
            meta.update(defer_head="rows")
        if net.cap is not None:
            meta.update(cap_head="mlp")
        if net.film_rows is not None:
            meta.update(film=net.film_rows.out_features)
    weights = model.policy.state_dict() if state is None else state
    th.save({k: v.detach().clone() for k, v in weights.items()}, folder / "policy.pt")
    (folder / "policy.json").write_text(json.dumps(meta, indent=1, sort_keys=True))


def read_policy_meta(folder: Path) -> dict[str, Any]:
    """``policy.json`` of a policy folder, checked field by field."""
    path = Path(folder) / "policy.json"
    if not path.is_file():
        raise PolicyLoadError(f"{path}: not found (a policy folder holds policy.json and policy.pt)")
    try:
        meta = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise PolicyLoadError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(meta, dict):
        raise PolicyLoadError(f"{path}: expected a mapping, got {type(meta).__name__}")
    if meta.get("format") != FORMAT:
        raise PolicyLoadError(f"{path}: format: expected {FORMAT}, got {meta.get('format')!r}")
    if meta.get("policy") not in POLICY_LAYOUTS:
        raise PolicyLoadError(f"{path}: policy: expected one of {tuple(POLICY_LAYOUTS)}, got {meta.get('policy')!r}")
    if meta.get("layout") not in POLICY_LAYOUTS[meta["policy"]]:
        raise PolicyLoadError(f"{path}: layout: the {meta['policy']!r} policy reads {POLICY_LAYOUTS[meta['policy']]}, "
                              f"got {meta.get('layout')!r}")
    if not isinstance(meta.get("servers"), int) or meta["servers"] < 1:
        raise PolicyLoadError(f"{path}: servers: expected a fleet size >= 1, got {meta.get('servers')!r}")
    return meta


def load_policy(folder: Path, model) -> dict[str, Any]:
    """Load a policy folder's weights into ``model.policy`` (made for the run it will serve).

    Raises :class:`PolicyLoadError` naming the file and field when the folder's policy or
    layout differs from the model's, or a flat policy meets another fleet size.
    """
    folder = Path(folder)
    meta = read_policy_meta(folder)
    path = folder / "policy.json"
    from ilets.agents.per_server import PerServerPolicy

    want = "per-server" if isinstance(model.policy, PerServerPolicy) else "flat"
    if meta["policy"] != want:
        raise PolicyLoadError(f"{path}: policy: the folder holds a {meta['policy']!r} policy, the run uses {want!r}")
    layout = getattr(getattr(model.get_env().envs[0], "unwrapped", None), "state", None)
    if layout is not None and layout.features != meta["layout"]:
        raise PolicyLoadError(f"{path}: layout: the policy reads {meta['layout']!r}, the run's observation is "
                              f"{layout.features!r}")
    servers = int(model.action_space.n)
    if want == "flat" and meta["servers"] != servers:
        raise PolicyLoadError(f"{path}: servers: a flat policy trained on {meta['servers']} servers cannot schedule "
                              f"{servers} (its input size is fixed by the fleet); the per-server policy can")
    if want == "per-server":
        # the model's own numbers, not the layout's: an env may lay more numbers before the rows
        # (the grid-command scenario's command blocks)
        net = model.policy.mlp_extractor
        if (meta.get("n_task"), meta.get("width")) != (net.n_task, net.width):
            raise PolicyLoadError(f"{path}: n_task/width: expected {(net.n_task, net.width)} for the run's "
                                  f"observation (layout {meta['layout']!r}), got {(meta.get('n_task'), meta.get('width'))}")
        heads = (meta.get("defer_head", "pooled"), "rows" if net.later is not None else "pooled")
        if heads[0] != heads[1]:
            raise PolicyLoadError(f"{path}: defer_head: the folder's policy scores deferring {heads[0]!r}, the run's "
                                  f"{heads[1]!r} (run.defer_head)")
        caps = (meta.get("cap_head", "pooled"), "mlp" if net.cap is not None else "pooled")
        if caps[0] != caps[1]:
            raise PolicyLoadError(f"{path}: cap_head: the folder's policy scores the cap levels {caps[0]!r}, the "
                                  f"run's {caps[1]!r} (run.cap_head)")
        films = (int(meta.get("film", 0)), 0 if net.film_rows is None else net.film_rows.out_features)
        if films[0] != films[1]:
            raise PolicyLoadError(f"{path}: film: the folder's policy has a film term of rank {films[0]}, the run's "
                                  f"{films[1]} (run.server_film)")
    weights = folder / "policy.pt"
    try:
        model.policy.load_state_dict(read_weights(weights))
    except (RuntimeError, ValueError) as err:  # names or shapes of another network
        if isinstance(err, PolicyLoadError):
            raise
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise PolicyLoadError(f"{weights}: cannot be loaded into this policy ({first})") from None
    return meta


def read_weights(path: Path) -> dict[str, th.Tensor]:
    """The state dict saved at ``path`` (:func:`save_policy`), read with torch's safe loader:
    tensors by name, every value finite. :class:`PolicyLoadError` naming the file otherwise
    (random bytes, a pickled object of another kind, a list, NaN weights): never torch's
    own message, which advises loading with ``weights_only=False``, the unsafe loader that runs
    whatever code the file holds."""
    path = Path(path)
    if not path.is_file():
        raise PolicyLoadError(f"{path}: not found (a policy folder holds policy.json and policy.pt)")
    try:
        state = th.load(path, weights_only=True, map_location="cpu")
    except Exception as err:  # noqa: BLE001 -- torch raises many kinds (UnpicklingError, RuntimeError, EOFError)
        raise PolicyLoadError(f"{path}: not a saved state dict of tensors ({type(err).__name__}); expected the "
                              "policy.pt that ilets writes") from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, th.Tensor) for k, v in state.items()):
        raise PolicyLoadError(f"{path}: holds a {type(state).__name__}, expected a state dict of tensors by name")
    bad = next((k for k, v in state.items() if v.is_floating_point() and not bool(th.isfinite(v).all())), None)
    if bad is not None:
        raise PolicyLoadError(f"{path}: {bad}: NaN or infinite weights; expected finite numbers (a damaged or "
                              "diverged policy)")
    return state
