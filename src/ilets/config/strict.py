"""Strict configuration plumbing: the typed base of every section, (de)serialisation and YAML.

:class:`_Typed` makes a dataclass refuse a field of the wrong type given from Python;
:func:`from_dict` and :func:`merge` build a dataclass tree from plain data, refusing unknown
keys and wrong types with a :class:`ConfigError` naming the dotted key; :func:`read_yaml`
reads a YAML mapping strictly (a repeated key is an error; ``1e9`` is a number).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import re
import types
import typing
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A configuration value is missing, unknown, of the wrong type or out of range."""


class _Typed:
    """Base of the configuration dataclasses: a field given a value of the wrong type (from
    Python; YAML goes through :func:`from_dict`) raises a :class:`TypeError` that names the
    field and the type it expects, instead of failing later deep inside numpy or torch."""

    def __post_init__(self) -> None:
        cls: type = type(self)
        for name, tp in _field_types(cls).items():
            problem = _type_problem(getattr(self, name), tp)
            if problem is not None:
                raise TypeError(f"{type(self).__name__}.{name}{problem}")


@functools.lru_cache(maxsize=None)
def _field_types(cls: type) -> dict[str, Any]:
    return {f.name: typing.get_type_hints(cls)[f.name] for f in dataclasses.fields(cls)}


def _type_problem(value: Any, tp: Any) -> str | None:
    """``": expected ..., got ..."`` (prefixed ``[i]`` for a tuple's item) when ``value`` is
    not of type ``tp``; None when it is. An integer counts as a number; a bool as neither."""
    got = f"got {type(value).__name__} {value!r}"
    # a type hint is a class: isinstance(tp, type) narrows is_dataclass to a dataclass type
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return None if isinstance(value, tp) else f": expected a {tp.__name__}, {got}"
    if typing.get_origin(tp) is tuple:
        if not isinstance(value, (tuple, list)):
            return f": expected a tuple, {got}"
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * len(value)
        elif len(value) != len(args):
            return f": expected {len(args)} items, got {len(value)}"
        for i, (v, a) in enumerate(zip(value, args)):
            problem = _type_problem(v, a)
            if problem is not None:
                return f"[{i}]{problem}"
        return None
    if tp is float:
        ok, expected = isinstance(value, numbers.Real), "a number (float)"
    elif tp is int:
        ok, expected = isinstance(value, numbers.Integral), "an integer (int)"
    elif tp is bool:
        return None if isinstance(value, bool) else f": expected true or false (bool), {got}"
    elif tp is str:
        return None if isinstance(value, str) else f": expected a string (str), {got}"
    else:
        return None
    return None if ok and not isinstance(value, bool) else f": expected {expected}, {got}"


# --- generic strict (de)serialisation ---------------------------------------------------

def to_dict(obj: Any) -> Any:
    """A dataclass tree as plain dicts/lists (tuples become lists), for YAML/JSON."""
    if dataclasses.is_dataclass(obj):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    return obj


def _coerce(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
        return from_dict(tp, value, where)
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_coerce(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise ConfigError(f"{where}: expected a list of {len(args)} items, got {len(value)}")
        return tuple(_coerce(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
    if origin in (typing.Union, types.UnionType):
        for a in typing.get_args(tp):
            try:
                return _coerce(value, a, where)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: expected {tp}, got {value!r}")
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        try:
            value = float(value)
        except OverflowError:
            raise ConfigError(f"{where}: expected a finite number, got an integer too large") from None
        if not math.isfinite(value):
            raise ConfigError(f"{where}: expected a finite number, got {value}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def from_dict(cls: type, data: dict[str, Any], where: str = "config") -> Any:
    """Build dataclass ``cls`` from ``data``; unknown keys and wrong types raise ConfigError."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(names)}")
    kwargs = {k: _coerce(v, hints[k], f"{where}.{k}") for k, v in data.items()}
    return cls(**kwargs)


def merge(base: Any, overrides: dict[str, Any] | None, where: str = "config") -> Any:
    """A copy of dataclass ``base`` with nested ``overrides`` applied (validated)."""
    current = to_dict(base)

    def deep(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        out = dict(a)
        for k, v in b.items():
            out[k] = deep(a[k], v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
        return out

    return from_dict(type(base), deep(current, overrides or {}), where)


# libyaml's parser when PyYAML was built with it (faster on the hundreds of shipped
# configs a report reads), the pure-Python one otherwise; the constructor and resolver are
# the safe ones either way
_SafeBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_SafeBase):  # type: ignore[valid-type,misc]
    """SafeLoader that refuses a mapping with a repeated key (PyYAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: the base class reports it
                    continue
                if repeated:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r} (each key may appear once per mapping)",
                        key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 (PyYAML) reads 1e9 and 2e-3 as strings: a float needs a dot and a signed exponent
# there. Numbers in exponent form are numbers here, as in YAML 1.2 and JSON.
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML mapping from ``path``; a missing file, a folder, a repeated key or a non-mapping
    raises ConfigError."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; expected a YAML file")
    if not path.is_file():
        raise ConfigError(f"{path}: configuration file not found")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: unreadable: {err}") from err
    return parse_yaml(text, path)


def parse_yaml(text: str, path: str | Path) -> dict[str, Any]:
    """A YAML mapping from ``text``, the content of ``path`` (a file, or a cell's file in a
    shipped folder's table: :mod:`ilets.cell_pack`), read as :func:`read_yaml` reads a file;
    errors name ``path``."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 -- a SafeLoader subclass
    except yaml.YAMLError as err:
        # one line: the problem and where, without PyYAML's multi-line excerpt
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        mark = getattr(err, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML: {problem}{at}") from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data
