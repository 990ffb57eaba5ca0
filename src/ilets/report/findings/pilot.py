"""Chapter 11, the tuning pilot: its finding and its two tables in plain words, from the flat
pilot's :class:`ilets.study.pilot.PilotReport` and the per-server pilot's
:class:`ilets.study.pilot.JointReport` (the rules themselves live in :mod:`ilets.study.pilot`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ilets.method_table import METHOD_LABELS

#: The settings the flat pilot tunes, in plain words (their configuration keys are for the
#: chapter's "Reproduce this" box).
SETTING_TEXT: dict[str, str] = {
    "reward.wait_form": "wait form", "ppo.learning_rate": "learning rate", "oinpt.max_demo_tasks": "demonstrated tasks",
    "oinpt.bc_epochs": "cloning epochs", "oail.learning_rate": "imitation learning rate", "ppo.n_steps": "rollout length",
    "ppo.n_epochs": "PPO epochs", "ppo.ent_coef": "entropy bonus",
}


def _setting(key: str) -> str:
    return SETTING_TEXT.get(key, key)


def _value(text: str) -> str:
    """A tried value as the table shows it: a whole number with thousands separators."""
    return f"{int(text):,}" if text.isdigit() else text


def flat_display(table: pd.DataFrame) -> pd.DataFrame:
    """The flat pilot's table (:attr:`ilets.study.pilot.PilotReport.table`) as one row per
    setting: the method it was tuned on, each value tried with its mean score J (the default
    first), the value chosen, its gain over the default and the cells finished."""
    rows = []
    for (method, key), group in table.groupby(["method", "setting"], sort=False):
        chosen = group[group["chosen"] == "chosen"]
        done = group["cells"].str.split(" / ", expand=True).astype(int).sum()
        tried = ", ".join(f"{_value(v)} ({j:.2f})" for v, j in zip(group["value"], group["mean_J"]))
        rows.append({"method": METHOD_LABELS.get(method, method), "setting": _setting(key),
                     "values tried (mean J)": tried, "chosen": ", ".join(map(_value, chosen["value"])),
                     "gain": ", ".join(f"{g:+.1f}%" for g in chosen["gain_vs_default"]),
                     "cells": f"{done[0]} of {done[1]}"})
    return pd.DataFrame(rows, columns=["method", "setting", "values tried (mean J)", "chosen", "gain", "cells"])


def joint_display(table: pd.DataFrame) -> pd.DataFrame:
    """The per-server pilot's table (:attr:`ilets.study.pilot.JointReport.table`): each
    candidate's round, settings, mean score J, held-out change with its 95 % interval, whether
    it keeps its clone and which round chose it."""
    if table.empty:
        return pd.DataFrame()
    change = [f"{100 * c:+.2f}% [{100 * lo:+.2f}, {100 * hi:+.2f}]" if np.isfinite(c) else "not measured"
              for c, lo, hi in zip(table["change"], table["change_low"], table["change_high"])]
    chosen = np.where(table["chosen"], "round 2", np.where(table["round_one_choice"], "round 1", ""))
    return pd.DataFrame({"candidate": table["variant"], "round": table["round"],
                         "settings": table["settings"].str.replace("methods.yaml's PPO", "the default PPO"),
                         "mean J": table["mean_J"].map("{:.3f}".format), "held-out change [95%]": change,
                         "keeps its clone": table["keeps"].map({True: "yes", False: "no"}), "chosen by": chosen})


def pilot_lead(flat, joint) -> str:
    """The pilot's finding (after the chapter's first sentence, which says how the pilot ran):
    what the flat pilot's rule changed, and what the per-server pilot's two rounds found and
    chose, from :func:`ilets.study.pilot.report` (``flat``) and :func:`ilets.study.pilot.joint_report`
    (``joint``)."""
    settings = len(flat.decided) + len(flat.undecided)
    if flat.cells == 0:
        text = "No flat pilot results are in this checkout, so every flat setting keeps its default."
    else:
        changes = ", ".join(f"{_setting(k)} {v:,}" if isinstance(v, int) else f"{_setting(k)} {v}"
                            for k, v in flat.changes.items())
        text = (f"For the flat learners the rule decided {len(flat.decided)} of {settings} settings and changed "
                f"{len(flat.changes)}: {changes or 'none'}.")
    t = joint.table
    if t.empty or joint.chosen is None:
        return text + " The per-server pilot has not chosen yet, so the per-server learners keep the default PPO."
    one = t[t["round"] == 1]
    row = t.set_index("variant").loc[joint.chosen]
    return text + (f" For the per-server learner, {int((one['change'] < 0).sum())} of {len(one)} first-round "
                   "candidates ended below their own frozen clone on held-out tasks, so a second round, declared "
                   "after the first was read, chose the best candidate that keeps its clone (held-out change "
                   f"{100 * row['change']:+.2f}%, 95% interval {100 * row['change_low']:+.2f} to "
                   f"{100 * row['change_high']:+.2f}%).")
