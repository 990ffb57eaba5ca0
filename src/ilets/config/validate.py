"""Checks declared on a configuration's fields, and the one validator that applies them.

A field says what it accepts where it is declared: ``theta: float = bounded(0.3, ge=0, le=1)``
(:func:`bounded`: a range, allowed values, what a tuple's items must be). :func:`check_config`
walks a configuration dataclass, its sections and its tuples of sections, and raises one
:class:`~ilets.config.strict.ConfigError` line for the first field that breaks its check, naming
the dotted field, what was expected and the value found::

    run.reward.theta: expected a number in [0, 1], got 1.5

Every field is also checked for its type (a value set from Python skips the YAML coercion) and,
for a float, for being finite (NaN fails every comparison, so a range alone lets it through).
What relates several fields stays code: a class's ``relations(where)`` method, called once its
fields have passed. The metadata does not enter :func:`dataclasses.asdict` or
:func:`~ilets.config.strict.to_dict`, so declaring a check leaves every digest as it was.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from ilets.config.strict import ConfigError, _type_problem

T = TypeVar("T")
C = TypeVar("C")

#: the key of a field's :class:`Check` in its ``dataclasses.field(metadata=...)``
CHECK = "check"


def _number(x: float) -> str:
    """A bound as written in a message: ``1``, ``0.5``, ``4294967295`` (``:g`` would round it)."""
    return str(x) if isinstance(x, int) else f"{x:g}"


@dataclass(frozen=True)
class Check:
    """What one field accepts (for a tuple field: what each item accepts, and the tuple's shape).

    ``ge``/``gt``/``le``/``lt``: bounds; ``choices``: the allowed values; ``also``: values allowed
    besides the range (``-1`` for "the run's seed"); ``test``: a predicate for what neither says
    (``what`` then says it); ``what``: the noun of the message (default "a number", "an integer");
    ``note``: what a special value means, in brackets after the range; ``nonempty``,
    ``distinct`` and ``ordered`` (non-decreasing, a ``(low, high)`` pair): the tuple's shape.
    """

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple[Any, ...] | None = None
    also: tuple[Any, ...] = ()
    test: Callable[[Any], bool] | None = None
    what: str = ""
    note: str = ""
    nonempty: bool = False
    distinct: bool = False
    ordered: bool = False

    def expected(self, kind: str) -> str:
        """What a value must be, as the message says it: ``a number in (0, 1] (1: no cap)``."""
        if self.choices is not None:
            text = f"{self.what} of {self.choices!r}" if self.what else f"one of {self.choices!r}"
        else:
            # (bracket, bound, operator) of each side: ``in [0, 1)`` with both, ``>= 0`` with one
            low = ("[", self.ge, ">=") if self.ge is not None else ("(", self.gt, ">") if self.gt is not None else None
            high = ("]", self.le, "<=") if self.le is not None else (")", self.lt, "<") if self.lt is not None else None
            if low and high:
                bounds = f"in {low[0]}{_number(low[1])}, {_number(high[1])}{high[0]}"
            else:
                side = low or high
                bounds = f"{side[2]} {_number(side[1])}" if side else ""
            text = " ".join(part for part in (self.what or kind, bounds) if part)
        if self.also:
            text = " or ".join([*(repr(v) for v in self.also), text])
        return f"{text} ({self.note})" if self.note else text

    def accepts(self, value: Any) -> bool:
        """Whether one value (a scalar, or one item of a tuple field) passes."""
        if value in self.also:
            return True
        if self.choices is not None and value not in self.choices:
            return False
        if self.test is not None and not self.test(value):
            return False
        return ((self.ge is None or value >= self.ge) and (self.gt is None or value > self.gt)
                and (self.le is None or value <= self.le) and (self.lt is None or value < self.lt))

    def shape_problem(self, items: tuple[Any, ...]) -> str | None:
        """What is wrong with a tuple field as a whole (empty, repeated, out of order), or None."""
        if self.nonempty and not items:
            return "expected at least one value, got none"
        if self.distinct and len(set(items)) != len(items):
            return f"expected distinct values, got {list(items)}"
        if self.ordered and any(a > b for a, b in zip(items, items[1:])):
            return f"expected values in increasing order (low <= high), got {list(items)}"
        return None


def bounded(default: T, **check: Any) -> T:
    """A dataclass field with ``default`` that accepts what :class:`Check` ``(**check)`` says:
    ``bounded(0.3, ge=0, le=1)``, ``bounded("log", choices=WAIT_FORMS)``."""
    return dataclasses.field(default=default, metadata={CHECK: Check(**check)})


@functools.lru_cache(maxsize=None)
def _plan(cls: type) -> tuple[tuple[str, Any, Check | None], ...]:
    """Each field of ``cls``: its name, its resolved type and its :class:`Check` (if any)."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name], f.metadata.get(CHECK)) for f in dataclasses.fields(cls))


def _kind(tp: Any) -> str:
    """The noun of a message for a value of type ``tp`` with no ``what`` of its own."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    return {int: "an integer", float: "a number"}.get(tp, "a value")


def _item_type(tp: Any) -> Any:
    """The items' type of ``tuple[X, ...]`` (or of ``tuple[X, X]``), through ``| None``."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) is not tuple and len(args) == 1:
        return _item_type(args[0])
    return args[0] if args else Any


def _check_value(value: Any, tp: Any, check: Check | None, at: str) -> None:
    """One field's value: its type, finite floats, then its :class:`Check`."""
    problem = _type_problem(value, tp)
    if problem is not None:
        raise ConfigError(f"{at}{problem}")
    if value is None:  # an optional field left out: nothing more to check
        return
    items = value if isinstance(value, tuple) else None
    for i, v in enumerate(items if items is not None else (value,)):
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(f"{at}{f'[{i}]' if items is not None else ''}: expected a finite number, got {v}")
    if check is None:
        return
    if items is None:
        if not check.accepts(value):
            raise ConfigError(f"{at}: expected {check.expected(_kind(tp))}, got {value!r}")
        return
    shape = check.shape_problem(items)
    if shape is not None:
        raise ConfigError(f"{at}: {shape}")
    for i, v in enumerate(items):
        if not check.accepts(v):
            raise ConfigError(f"{at}[{i}]: expected {check.expected(_kind(_item_type(tp)))}, got {v!r}")


def check_config(config: C, where: str) -> C:
    """``config`` once every field of it and of its sections (nested dataclasses, tuples of
    them) has passed its type, finiteness and :func:`bounded` check, and every class's
    ``relations(where)`` has passed after its fields; else the first problem as a one-line
    :class:`ConfigError` at the dotted field (``where.section.field``)."""
    cls: type = type(config)
    for name, tp, check in _plan(cls):
        value = getattr(config, name)
        at = f"{where}.{name}"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            check_config(value, at)
        elif isinstance(value, tuple) and value and all(dataclasses.is_dataclass(v) for v in value):
            for i, v in enumerate(value):
                check_config(v, f"{at}[{i}]")
        else:
            _check_value(value, tp, check, at)
    relations = getattr(config, "relations", None)
    if relations is not None:
        relations(where)
    return config


class Validated:
    """Base of a configuration section validated by :func:`check_config`: ``validate(where)``
    checks every field's declared :func:`bounded` range, then the class's ``relations``."""

    def validate(self, where: str) -> Self:
        """Self, once :func:`check_config` passes at ``where``; else a :class:`ConfigError`."""
        return check_config(self, where)
