"""Python values → rosidl_python field values, by the field's IDL type as ``get_fields_and_field_types()``
names it, following rosidl's type rules (design doc "Interface definition and language mappings").

Pure Python, so it runs without ROS. Why it exists: ``rosidl_runtime_py.set_message_fields`` converts a value
with the type of the field's default, so an int for a ``byte`` (IDL ``octet``, held as a 1-byte ``bytes``)
becomes ``bytes(N)`` — N zero bytes — and the C conversion reads the first one: ``DiagnosticStatus.level``
WARN (1) or ERROR (2) would go out as OK (0).

Rules: ``octet`` → 1-byte ``bytes`` (from an int 0..255 or 1-byte bytes); a sequence/array of ``octet`` → a
list of 1-byte ``bytes``; ``boolean`` → bool; ``float``/``double`` → float; integer types → int (range
checked); ``string`` (``string<=N`` bounded) → str; ``char`` (IDL, 1 character) → str; sequences and arrays of
those → lists (fixed arrays must have their length, bounded sequences at most their bound).
"""

from __future__ import annotations

import re
from typing import Any

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1), "uint8": (0, 2**8 - 1), "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1), "int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1), "uint64": (0, 2**64 - 1),
}  # fmt: skip
_FLOATS = ("float", "double", "long double")
_SEQUENCE = re.compile(r"^sequence<(?P<elem>[^,>]+(?:<=\d+)?)(?:,\s*(?P<bound>\d+))?>$")
_ARRAY = re.compile(r"^(?P<elem>.+)\[(?P<size>\d+)\]$")
_BOUNDED_STRING = re.compile(r"^w?string<=(?P<bound>\d+)$")


class FieldTypeError(TypeError):
    """A value does not fit a field's IDL type."""


def is_nested(idl_type: str) -> bool:
    """True for a message type (``pkg/Name``), not a primitive."""
    return "/" in idl_type


def element_type(idl_type: str) -> tuple[str, str, int] | None:
    """``(kind, element type, size)`` of a sequence (size = bound, 0 unbounded) or array; None for a scalar."""
    if m := _SEQUENCE.match(idl_type):
        return "sequence", m["elem"], int(m["bound"] or 0)
    if m := _ARRAY.match(idl_type):
        return "array", m["elem"], int(m["size"])
    return None


def _octet(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray) and len(value) == 1:
        return bytes(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 255:
        return bytes([value])
    raise FieldTypeError(f"a byte (octet) field takes an int 0..255 or one byte, got {value!r}")


def scalar(idl_type: str, value: Any) -> Any:
    """``value`` as a rosidl_python scalar of ``idl_type``."""
    if idl_type == "octet":
        return _octet(value)
    if idl_type == "boolean":
        return bool(value)
    if idl_type in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FieldTypeError(f"a {idl_type} field takes a number, got {value!r}")
        return float(value)
    if idl_type in _INT_RANGES:
        if isinstance(value, bool) or (not isinstance(value, int) and not hasattr(value, "__index__")):
            raise FieldTypeError(f"an {idl_type} field takes an int, got {value!r}")
        number = int(value)
        low, high = _INT_RANGES[idl_type]
        if not low <= number <= high:
            raise FieldTypeError(f"{number} is out of range for {idl_type} [{low}, {high}]")
        return number
    if idl_type in ("string", "wstring") or (m := _BOUNDED_STRING.match(idl_type)):
        if not isinstance(value, str):
            raise FieldTypeError(f"a {idl_type} field takes a str, got {value!r}")
        if idl_type not in ("string", "wstring") and m is not None and len(value) > int(m["bound"]):
            raise FieldTypeError(f"{value!r} is longer than {idl_type}")
        return value
    if idl_type in ("char", "wchar"):
        if not isinstance(value, str) or len(value) != 1:
            raise FieldTypeError(f"a {idl_type} field takes one character, got {value!r}")
        return value
    raise FieldTypeError(f"unknown IDL type {idl_type!r}")


def field_value(idl_type: str, value: Any) -> Any:
    """``value`` for a primitive field or a sequence/array of primitives (message types are not handled)."""
    shape = element_type(idl_type)
    if shape is None:
        return scalar(idl_type, value)
    kind, elem, size = shape
    if isinstance(value, bytes | bytearray) and elem == "octet":
        items: list[Any] = [bytes([b]) for b in value]
    else:
        items = [scalar(elem, v) for v in value]
    if kind == "array" and len(items) != size:
        raise FieldTypeError(f"{idl_type} takes exactly {size} values, got {len(items)}")
    if kind == "sequence" and size and len(items) > size:
        raise FieldTypeError(f"{idl_type} takes at most {size} values, got {len(items)}")
    return items
