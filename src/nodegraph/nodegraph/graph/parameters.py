"""Node parameters from ``ros__parameters`` YAML files and command-line overrides.

A file may address a node as ``/**``, ``**``, ``name``, ``/name`` or ``/ns/name`` (wildcards ``*``/``**`` in
path segments are honoured); later files and more specific entries win, and ``-p`` overrides win over files.
Nested mappings flatten to dotted names, as in ROS.
"""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
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


# rcl_interfaces/msg/ParameterType values
NOT_SET, BOOL, INTEGER, DOUBLE, STRING, BYTE_ARRAY, BOOL_ARRAY, INTEGER_ARRAY, DOUBLE_ARRAY, STRING_ARRAY = range(10)
TYPE_NAMES = ("not set", "bool", "integer", "double", "string", "byte array", "bool array", "integer array",
              "double array", "string array")  # fmt: skip


def type_of(value: Any, hint: int = NOT_SET) -> int:
    """The ParameterType code of a Python value; an empty list takes ``hint`` when it is an array type."""
    if value is None:
        return NOT_SET
    for python_type, code in ((bool, BOOL), (int, INTEGER), (float, DOUBLE), (str, STRING)):
        if isinstance(value, python_type):
            return code
    if isinstance(value, bytes | bytearray):
        return BYTE_ARRAY
    if isinstance(value, list | tuple):
        if not value:
            return hint if hint >= BYTE_ARRAY else STRING_ARRAY
        for python_type, code in ((bool, BOOL_ARRAY), (int, INTEGER_ARRAY), (float, DOUBLE_ARRAY), (str, STRING_ARRAY)):
            if all(isinstance(v, python_type) and (python_type is bool or not isinstance(v, bool)) for v in value):
                return code
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            return DOUBLE_ARRAY
    raise ParameterError(f"unsupported parameter value {value!r} ({type(value).__name__})")


@dataclass(frozen=True)
class ParameterDescriptor:
    """What ``describe_parameters`` tells about a declared parameter (rcl_interfaces/msg/ParameterDescriptor)."""

    name: str
    type: int
    description: str = ""
    read_only: bool = False


@dataclass(frozen=True)
class SetParametersResult:
    """Outcome of setting parameters (rcl_interfaces/msg/SetParametersResult): ``reason`` says why not."""

    successful: bool
    reason: str = ""


OnSetParametersCallback = Callable[[Mapping[str, Any]], SetParametersResult]
"""Called with the new values (name → value) before they are applied; a result with ``successful=False``
refuses them (rclpy's ``add_on_set_parameters_callback``)."""


class ParameterStore:
    """Declared parameters of one node with rclpy's semantics; overrides come from files and ``-p`` arguments.

    Setting a parameter (``set``/``set_atomically``, what the ``~/set_parameters*`` services do) refuses
    undeclared and read-only names and a change of type (an int may widen to a float, as for overrides),
    then asks every ``on_set`` callback; ``on_changed`` listeners hear of each accepted change.
    """

    def __init__(self, overrides: Mapping[str, Any]) -> None:
        self._overrides = dict(overrides)
        self._values: dict[str, Any] = {}
        self._descriptors: dict[str, ParameterDescriptor] = {}
        self._on_set: list[OnSetParametersCallback] = []
        self._on_changed: list[Callable[[dict[str, Any], dict[str, Any]], None]] = []
        self._lock = threading.RLock()

    def declare(self, name: str, default: Any, *, read_only: bool = False, description: str = "") -> Any:
        """Declare ``name``; the override wins over ``default``, and must keep its type (int may widen to float)."""
        with self._lock:
            if name in self._values:
                raise ParameterError(f"parameter {name!r} declared twice")
            value = self._overrides.get(name, default)
            if default is not None and value is not default:
                value = _coerce(name, value, default)
            hint = type_of(default) if default is not None else NOT_SET
            self._values[name] = value
            self._descriptors[name] = ParameterDescriptor(name, type_of(value, hint), description, read_only)
            listeners = list(self._on_changed)
        for listener in listeners:
            listener({name: value}, {})
        return value

    def get(self, name: str) -> Any:
        if name not in self._values:
            raise ParameterError(f"parameter {name!r} is not declared")
        return self._values[name]

    def has(self, name: str) -> bool:
        return name in self._values

    def items(self) -> dict[str, Any]:
        return dict(self._values)

    def descriptor(self, name: str) -> ParameterDescriptor:
        if name not in self._descriptors:
            raise ParameterError(f"parameter {name!r} is not declared")
        return self._descriptors[name]

    def add_on_set_callback(self, callback: OnSetParametersCallback) -> None:
        self._on_set.append(callback)

    def add_on_changed(self, listener: Callable[[dict[str, Any], dict[str, Any]], None]) -> None:
        """``listener(new, changed)`` (name → value) after each declaration and accepted change."""
        self._on_changed.append(listener)

    def names(self, prefixes: Sequence[str] = (), depth: int = 0) -> list[str]:
        """Declared names under ``prefixes`` (all when empty), at most ``depth`` levels deep (0: any)."""

        def within(rest: str) -> bool:
            return depth == 0 or rest.count(".") < depth

        if not prefixes:
            return sorted(n for n in self._values if within(n))
        return sorted(
            n for n in self._values
            if any(n == p or (n.startswith(p + ".") and within(n[len(p) + 1 :])) for p in prefixes)
        )  # fmt: skip

    def set(self, values: Mapping[str, Any]) -> list[SetParametersResult]:
        """Set each parameter on its own (``~/set_parameters``): one result per name, in order."""
        return [self.set_atomically({name: value}) for name, value in values.items()]

    def set_atomically(self, values: Mapping[str, Any]) -> SetParametersResult:
        """Set all of ``values`` or none (``~/set_parameters_atomically``)."""
        with self._lock:
            undeclared = [n for n in values if n not in self._values]
            if undeclared:
                return SetParametersResult(False, f"Invalid access to undeclared parameter(s): {undeclared}")
            coerced: dict[str, Any] = {}
            for name, value in values.items():
                descriptor = self._descriptors[name]
                if descriptor.read_only:
                    return SetParametersResult(False, f"Trying to set a read-only parameter: {name}.")
                try:
                    coerced[name] = coerce_to_type(name, value, descriptor.type)
                except ParameterError as exc:
                    return SetParametersResult(False, str(exc))
            for callback in self._on_set:
                result = callback(dict(coerced))
                if not result.successful:
                    return result
            self._values.update(coerced)
            listeners = list(self._on_changed)
        for listener in listeners:
            listener({}, coerced)
        return SetParametersResult(True)


def coerce_to_type(name: str, value: Any, declared: int) -> Any:
    """``value`` for a parameter of type ``declared`` (a ParameterType code); ParameterError on a change of type
    (an int may widen to a float), with rclpy's reason."""
    if declared == NOT_SET:
        return value
    kind = type_of(value, declared)
    if kind == declared:
        return list(value) if isinstance(value, tuple) else value
    if declared == DOUBLE and kind == INTEGER:
        return float(value)
    if declared == DOUBLE_ARRAY and kind == INTEGER_ARRAY:
        return [float(v) for v in value]
    raise ParameterError(
        f"Wrong parameter type, parameter {name} is of type {TYPE_NAMES[declared]}, "
        f"setting it to {TYPE_NAMES[kind]} is not allowed."
    )


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
