"""RIHS01 type hashes (REP-2016) computed the way ROS 2 computes them.

Differs from rosbags' ``hash_rihs01`` in one place: a ``.msg`` ``char`` is IDL ``uint8`` in ROS 2, so its
field type id is UINT8 (3), not CHAR (13). That matters for every service (``ServiceEventInfo.client_gid`` is
``char[16]``) and every action.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from rosbags.interfaces import Nodetype

# REP-2016 / type_description_interfaces FieldType ids.
_TYPE_IDS = {
    "int8": 2,
    "uint8": 3,
    "char": 3,  # .msg char maps to IDL uint8
    "int16": 4,
    "uint16": 5,
    "int32": 6,
    "uint32": 7,
    "int64": 8,
    "uint64": 9,
    "float32": 10,
    "float64": 11,
    "float128": 12,
    "bool": 15,
    "byte": 16,
    "string": 17,
    "wstring": 18,
}
_NESTED = 1
_BOUNDED_STRING = 21
_BOUNDED_WSTRING = 22
_ARRAY_OFFSET, _BOUNDED_SEQUENCE_OFFSET, _SEQUENCE_OFFSET = 48, 96, 144

Fielddefs = dict[str, tuple[Any, Any]]


def _field_type(desc: Any, referenced: set[str]) -> dict[str, Any]:
    offset = capacity = string_capacity = 0
    if desc[0] == Nodetype.ARRAY:
        offset, (desc, capacity) = _ARRAY_OFFSET, desc[1]
    elif desc[0] == Nodetype.SEQUENCE:
        desc, bound = desc[1]
        offset, capacity = (_BOUNDED_SEQUENCE_OFFSET, bound) if bound else (_SEQUENCE_OFFSET, 0)
    kind, rest = desc
    nested = ""
    if kind == Nodetype.NAME:
        type_id, nested = _NESTED, rest
        referenced.add(rest)
    else:
        base, bound = rest
        if base in ("string", "wstring") and bound:
            type_id = _BOUNDED_STRING if base == "string" else _BOUNDED_WSTRING
            string_capacity = bound
        else:
            type_id = _TYPE_IDS[base]
    return {
        "type_id": type_id + offset,
        "capacity": capacity,
        "string_capacity": string_capacity,
        "nested_type_name": nested,
    }


def _description(name: str, fielddefs: Fielddefs, referenced: set[str]) -> dict[str, Any]:
    if name not in fielddefs:
        raise KeyError(f"type {name!r} is not in the typestore")
    fields = fielddefs[name][1] or [("structure_needs_at_least_one_member", (Nodetype.BASE, ("uint8", 0)))]
    return {
        "type_name": name,
        "fields": [{"name": fname, "type": _field_type(desc, referenced)} for fname, desc in fields],
    }


def type_description(name: str, fielddefs: Fielddefs) -> dict[str, Any]:
    """The hashable TypeDescription of ``name``: its fields and every type it references, sorted by name."""
    pending: set[str] = set()
    main = _description(name, fielddefs, pending)
    done: dict[str, dict[str, Any]] = {}
    while pending:
        ref = pending.pop()
        if ref in done or ref == name:
            continue
        done[ref] = _description(ref, fielddefs, pending)
    return {"type_description": main, "referenced_type_descriptions": [done[k] for k in sorted(done)]}


def rihs01(name: str, fielddefs: Fielddefs) -> str:
    """``RIHS01_<sha256 hex>`` of type ``name`` (a message, or a service/action description struct)."""
    text = json.dumps(type_description(name, fielddefs))
    return "RIHS01_" + hashlib.sha256(text.encode()).hexdigest()
