"""Build, convert and (de)serialize messages of the typestore (rosbags dataclasses).

``make(type, **fields)`` fills every missing field with its ROS default, recursively; numeric sequences are
numpy arrays, as rosbags expects. ``to_plain``/``from_plain`` convert to and from YAML-friendly data for the
CLI (``topic pub``, ``action send-goal``, ``topic echo``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from rosbags.interfaces import Nodetype

from nodegraph.interfaces.typestore import InterfaceError, normalize, typestore
from nodegraph.time import sec_nanosec

_NUMPY = {
    "bool": np.bool_,
    "byte": np.uint8,
    "char": np.uint8,
    "int8": np.int8,
    "uint8": np.uint8,
    "int16": np.int16,
    "uint16": np.uint16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "float32": np.float32,
    "float64": np.float64,
}


class MessageError(ValueError):
    """A message or its fields do not match the type."""


def _fields(type_name: str) -> list[tuple[str, Any]]:
    try:
        return list(typestore().fielddefs[type_name][1])
    except KeyError:
        raise InterfaceError(f"unknown message type {type_name!r}") from None


def _default_scalar(base: str) -> Any:
    if base in ("string", "wstring"):
        return ""
    if base == "bool":
        return False
    if base.startswith("float"):
        return 0.0
    return 0


def _default_value(desc: Any) -> Any:
    kind, rest = desc
    if kind == Nodetype.NAME:
        return make(rest)
    if kind == Nodetype.BASE:
        return _default_scalar(rest[0])
    (elem_kind, elem), length = rest
    if kind == Nodetype.ARRAY:
        if elem_kind == Nodetype.BASE and elem[0] in _NUMPY:
            return np.zeros(length, dtype=_NUMPY[elem[0]])
        return [_default_value((elem_kind, elem)) for _ in range(length)]
    if elem_kind == Nodetype.BASE and elem[0] in _NUMPY:
        return np.zeros(0, dtype=_NUMPY[elem[0]])
    return []


def _coerce(type_name: str, field: str, desc: Any, value: Any) -> Any:
    kind, rest = desc
    if kind == Nodetype.NAME:
        if isinstance(value, Mapping):
            return from_plain(rest, value)
        return value
    if kind == Nodetype.BASE:
        return value
    (elem_kind, elem), length = rest
    if elem_kind == Nodetype.BASE and elem[0] in _NUMPY:
        if isinstance(value, bytes | bytearray | memoryview):
            array: np.ndarray = np.frombuffer(value, dtype=np.uint8).astype(_NUMPY[elem[0]], copy=False)
        else:
            array = np.asarray(value, dtype=_NUMPY[elem[0]])
        if kind == Nodetype.ARRAY and array.shape != (length,):
            raise MessageError(f"{type_name}.{field}: expected {length} values, got {array.shape}")
        return array
    items = list(value)
    if elem_kind == Nodetype.NAME:
        items = [from_plain(elem, v) if isinstance(v, Mapping) else v for v in items]
    return items


def make(type_name: str, /, **fields: Any) -> Any:
    """A message of ``type_name`` with ``fields`` set and every other field at its default."""
    type_name = normalize(type_name)
    defs = _fields(type_name)
    known = {name for name, _ in defs}
    unknown = set(fields) - known
    if unknown:
        raise MessageError(f"{type_name} has no field(s) {sorted(unknown)}; fields: {sorted(known)}")
    values = {
        name: _coerce(type_name, name, desc, fields[name]) if name in fields else _default_value(desc)
        for name, desc in defs
    }
    return typestore().types[type_name](**values)


def from_plain(type_name: str, data: Mapping[str, Any] | None) -> Any:
    """A message from YAML-like data (nested mappings and lists)."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise MessageError(f"{type_name}: expected a mapping of fields, got {type(data).__name__}")
    return make(type_name, **dict(data))


def to_plain(msg: Any) -> Any:
    """Nested dicts/lists/scalars of a message (for printing as YAML)."""
    if isinstance(msg, np.ndarray):
        return msg.tolist()
    if isinstance(msg, list | tuple):
        return [to_plain(v) for v in msg]
    if hasattr(msg, "__msgtype__"):  # the type's fields only (rosbags also lists its constants as fields)
        return {name: to_plain(getattr(msg, name)) for name, _ in _fields(msg.__msgtype__)}
    if isinstance(msg, np.generic):
        return msg.item()
    return msg


def serialize(msg: Any, type_name: str) -> bytes:
    """CDR bytes (with the 4-byte encapsulation header) of ``msg``."""
    try:
        return bytes(typestore().serialize_cdr(msg, normalize(type_name)))
    except Exception as exc:
        raise MessageError(f"cannot serialize {type_name}: {exc}") from exc


def deserialize(data: bytes | memoryview, type_name: str) -> Any:
    """Message of ``type_name`` from CDR bytes; raises MessageError on a malformed payload."""
    try:
        return typestore().deserialize_cdr(bytes(data), normalize(type_name))
    except Exception as exc:
        raise MessageError(f"malformed {type_name} payload ({len(data)} bytes): {exc}") from exc


def time_message(ns: int) -> Any:
    """builtin_interfaces/msg/Time of ``ns`` nanoseconds (since the epoch, or sim time)."""
    sec, nanosec = sec_nanosec(ns)
    return make("builtin_interfaces/msg/Time", sec=sec, nanosec=nanosec)
