"""Node parameters from ``ros__parameters`` YAML files and command-line overrides.

A file may address a node as ``/**``, ``**``, ``name``, ``/name`` or ``/ns/name`` (wildcards ``*``/``**`` in
path segments are honoured); later files and more specific entries win, and ``-p`` overrides win over files.
Nested mappings flatten to dotted names, as in ROS.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml


class ParameterError(ValueError):
    """A parameter file or value is invalid."""


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` → ``{"a.b": 1}``."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _matches(pattern: str, fqn: str) -> bool:
    pattern = "/" + pattern.strip("/")
    if pattern == "/**":
        return True
    if "*" not in pattern:
        return pattern == fqn or pattern == "/" + fqn.rsplit("/", 1)[-1]
    return fnmatch.fnmatchcase(fqn, pattern.replace("**", "*"))


def parameters_from_file(path: Path, fqn: str) -> dict[str, Any]:
    """Parameters a YAML file gives the node with fully qualified name ``fqn`` (e.g. ``/ns/name``)."""
    try:
        document = yaml.safe_load(path.read_text())
    except FileNotFoundError as exc:
        raise ParameterError(f"parameter file not found: {path}") from exc
    except yaml.YAMLError as exc:
        raise ParameterError(f"{path}: invalid YAML: {exc}") from exc
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        raise ParameterError(f"{path}: top level must map node names to ros__parameters")
    values: dict[str, Any] = {}
    # Wildcard entries first so that entries naming the node exactly take precedence.
    for key in sorted(document, key=lambda k: "*" not in str(k)):
        entry = document[key]
        if not _matches(str(key), fqn):
            continue
        if not isinstance(entry, Mapping) or "ros__parameters" not in entry:
            raise ParameterError(f"{path}: entry {key!r} has no 'ros__parameters' mapping")
        params = entry["ros__parameters"] or {}
        if not isinstance(params, Mapping):
            raise ParameterError(f"{path}: {key}.ros__parameters must be a mapping")
        values.update(flatten(params))
    return values


class ParameterStore:
    """Declared parameters of one node; overrides come from files and ``-p`` arguments."""

    def __init__(self, overrides: Mapping[str, Any]) -> None:
        self._overrides = dict(overrides)
        self._values: dict[str, Any] = {}

    def declare(self, name: str, default: Any) -> Any:
        """Declare ``name``; the override wins over ``default``, and must keep its type (int may widen to float)."""
        if name in self._values:
            raise ParameterError(f"parameter {name!r} declared twice")
        value = self._overrides.get(name, default)
        if default is not None and value is not default:
            value = _coerce(name, value, default)
        self._values[name] = value
        return value

    def get(self, name: str) -> Any:
        if name not in self._values:
            raise ParameterError(f"parameter {name!r} is not declared")
        return self._values[name]

    def items(self) -> dict[str, Any]:
        return dict(self._values)


def _coerce(name: str, value: Any, default: Any) -> Any:
    if isinstance(default, bool) or isinstance(value, bool):
        if isinstance(default, bool) and isinstance(value, bool):
            return value
    elif isinstance(default, float) and isinstance(value, int):
        return float(value)
    elif isinstance(default, list | tuple) and isinstance(value, list | tuple):
        return list(value)
    elif isinstance(value, type(default)):
        return value
    raise ParameterError(
        f"parameter {name!r}: expected {type(default).__name__}, got {type(value).__name__} ({value!r})"
    )
