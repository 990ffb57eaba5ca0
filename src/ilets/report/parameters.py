"""Chapter 2's parameter table, generated from the configuration classes' own field docs.

Every row is one field of :class:`ilets.config.RunConfig` (:data:`PARAMETERS` chooses which,
in which order): its value in the results' settings, and its meaning and source read from the
``#:`` comment that documents the field in its class (:func:`field_docs`): the source is the
comment's last bracketed tag (``[paper]``, ``[code]``, ``[ours]``, ``[lineage]``, the tags
the deviations chapter and ``configs/methods.yaml`` use), the meaning is the rest. Nothing in
the table is typed twice: change a field's value or doc and the chapter follows.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import io
import re
import textwrap
import tokenize
import typing
from typing import Sequence

import pandas as pd

from ilets.config import RewardConfig, RunConfig
from ilets.config.world import WAIT_FORMS

#: The fields of chapter 2's table, ``section.field`` of :class:`ilets.config.RunConfig`, in order.
#: ``fleet.servers`` shows the profile's fleet sizes (a grid runs each).
PARAMETERS = (
    "fleet.servers", "fleet.capacity_levels", "fleet.capacity_probs", "fleet.mips", "fleet.idle_w", "fleet.active_w",
    "workload.length_mi", "workload.deadline_s",
    "reward.theta", "reward.wait_scale_s", "reward.wait_form", "reward.deadline_penalty",
    "ppo.hidden", "ppo.n_steps", "ppo.batch_size", "ppo.n_epochs", "ppo.learning_rate", "ppo.gamma",
)

#: The source tag of a doc: its last ``[...]``.
_TAG = re.compile(r"\s*\[([^\[\]]+)\]")


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Each field of the class ``cls`` with its ``#:`` doc, read from the class's source: the
    ``#:`` comment lines right above the field, then a ``#:`` comment at the end of its line,
    joined by a space. Fields without such a comment are left out."""
    source = textwrap.dedent(inspect.getsource(cls))
    own: dict[int, str] = {}  # line -> a "#:" comment alone on its line
    trailing: dict[int, str] = {}  # line -> a "#:" comment after code
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and tok.string.startswith("#:"):
            text = tok.string[2:].strip()
            (own if tok.line[:tok.start[1]].strip() == "" else trailing)[tok.start[0]] = text
    docs: dict[str, str] = {}
    klass = ast.parse(source).body[0]
    assert isinstance(klass, ast.ClassDef)
    for node in klass.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above: list[str] = []
            line = node.lineno - 1
            while line in own:
                above.insert(0, own[line])
                line -= 1
            parts = above + ([trailing[node.end_lineno]] if node.end_lineno in trailing else [])
            if parts:
                docs[node.target.id] = " ".join(parts)
    return docs


def meaning_and_source(doc: str) -> tuple[str, str]:
    """A field doc split into its meaning and its source tag (the last ``[...]``; ``""`` without one):
    ``"task length range, MI [lineage]"`` -> ``("task length range, MI", "lineage")``."""
    tags = list(_TAG.finditer(doc))
    if not tags:
        return doc.strip(), ""
    last = tags[-1]
    meaning = (doc[:last.start()] + doc[last.end():]).strip().rstrip(";,").strip()
    return meaning, last.group(1).strip()


def _section_class(section: str) -> type:
    hints = typing.get_type_hints(RunConfig)
    return hints[section]


def value_text(cls: type, name: str, value) -> str:
    """A field's value as the table prints it, by its annotation: a ``tuple[float, float]`` is a
    range (``"600-1800"``), any other tuple a list (``"0.25, 0.5, 1"``), a number with ``:g``."""
    hint = typing.get_type_hints(cls)[name]
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is not Ellipsis:
            return f"{value[0]:g}-{value[1]:g}"
        return ", ".join(f"{v:g}" for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def parameter_table(run: RunConfig, servers: Sequence[int], fields: Sequence[str] = PARAMETERS) -> pd.DataFrame:
    """One row per ``section.field`` of ``fields``: the parameter, its value in ``run`` (for
    ``fleet.servers``, ``servers``: a profile's fleet sizes), its meaning and its source from
    the field's doc (:func:`field_docs`, :func:`meaning_and_source`). A field without a doc
    raises ValueError: the table has nothing typed by hand to fall back on."""
    rows = []
    for path in fields:
        section, name = path.split(".")
        cls = _section_class(section)
        if name not in {f.name for f in dataclasses.fields(cls)}:
            raise ValueError(f"{path}: {cls.__name__} has no field {name!r}")
        doc = field_docs(cls).get(name)
        if not doc:
            raise ValueError(f"{path}: {cls.__name__}.{name} has no '#:' doc to take its meaning and source from")
        meaning, source = meaning_and_source(doc)
        value = (", ".join(str(s) for s in servers) if path == "fleet.servers"
                 else value_text(cls, name, getattr(getattr(run, section), name)))
        rows.append({"parameter": f"`{path}`", "value": value, "meaning": meaning, "source": source})
    return pd.DataFrame(rows, columns=["parameter", "value", "meaning", "source"])


# --- the cost's equation, with the wait form the results used ------------------------------

#: Each wait form of :func:`ilets.simulator.objective.wait_term` in LaTeX, of ``R_j(i)/tau``.
WAIT_LATEX = {"capped": r"\min\!\Big(1, \frac{R_j(i)}{\tau}\Big)",
              "linear": r"\frac{R_j(i)}{\tau}",
              "log": r"\log\!\Big(1 + \frac{R_j(i)}{\tau}\Big)"}
#: Each wait form in words, for the sentence that names the alternatives.
WAIT_WORDS = {"capped": "capped, every response beyond tau costing the same",
              "linear": "linear, growing with the response without bound",
              "log": "logarithmic, growing with the response ever more slowly"}


def cost_equation(reward: RewardConfig) -> str:
    """Chapter 2's cost as display math (MyST ``$$ ... $$``), with the wait term in the form
    ``reward.wait_form`` (:data:`WAIT_LATEX`): the form the results shown were computed with,
    read from their configuration, never typed into the chapter."""
    return ("$$ \\text{cost}_j(i) = \\theta\\,\\frac{P(a_j) + P^{act}_i c_j / C_i}{\\sum_k (P^{idle}_k + P^{act}_k)}\n"
            f"  + (1-\\theta)\\,{WAIT_LATEX[reward.wait_form]} + \\lambda\\,[R_j(i) > d_j] $$")


def wait_form_text(reward: RewardConfig) -> str:
    """Which wait form the equation shows (``reward.wait_form`` of the results' configuration)
    and the others :data:`ilets.config.world.WAIT_FORMS` allows, as alternatives."""
    others = [f for f in WAIT_FORMS if f != reward.wait_form]
    alt = " and ".join(f"${WAIT_LATEX[f]}$ ({f})" for f in others)
    return (f"The waiting term is {WAIT_WORDS[reward.wait_form]} (`wait_form: {reward.wait_form}`), the form "
            f"the results shown were computed with; the configuration offers {alt} as alternatives.")
