"""Python values ↔ rcl_interfaces/msg/ParameterValue (typestore messages), as rclpy's ``Parameter`` converts."""

from __future__ import annotations

from typing import Any

import numpy as np

from nodegraph.graph import parameters as p
from nodegraph.interfaces.messages import make

VALUE_TYPE = "rcl_interfaces/msg/ParameterValue"
_FIELDS = {
    p.BOOL: "bool_value",
    p.INTEGER: "integer_value",
    p.DOUBLE: "double_value",
    p.STRING: "string_value",
    p.BYTE_ARRAY: "byte_array_value",
    p.BOOL_ARRAY: "bool_array_value",
    p.INTEGER_ARRAY: "integer_array_value",
    p.DOUBLE_ARRAY: "double_array_value",
    p.STRING_ARRAY: "string_array_value",
}


def to_value_msg(value: Any, kind: int | None = None) -> Any:
    """The ParameterValue of ``value`` (its type code is ``kind``, or inferred); None → NOT_SET."""
    kind = p.type_of(value) if kind is None else kind
    if kind == p.NOT_SET:
        return make(VALUE_TYPE, type=p.NOT_SET)
    field = _FIELDS[kind]
    if kind == p.BYTE_ARRAY:
        value = list(bytes(value)) if isinstance(value, bytes | bytearray) else list(value)
    elif kind == p.DOUBLE_ARRAY:
        value = [float(v) for v in value]
    elif kind == p.DOUBLE:
        value = float(value)
    return make(VALUE_TYPE, type=kind, **{field: value})


def from_value_msg(msg: Any) -> Any:
    """The Python value of a ParameterValue (lists for arrays, bytes for a byte array, None when NOT_SET)."""
    kind = int(msg.type)
    if kind == p.NOT_SET or kind not in _FIELDS:
        return None
    value = getattr(msg, _FIELDS[kind])
    if kind == p.BYTE_ARRAY:
        return bytes(bytearray(int(v) if not isinstance(v, bytes) else v[0] for v in value))
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple):
        return list(value)
    return value.item() if isinstance(value, np.generic) else value


def parameter_msg(name: str, value: Any, kind: int | None = None) -> Any:
    """An rcl_interfaces/msg/Parameter."""
    return make("rcl_interfaces/msg/Parameter", name=name, value=to_value_msg(value, kind))
