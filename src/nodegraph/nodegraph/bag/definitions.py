"""Full ``ros2msg`` definition text of a type (the MCAP schema data rosbag2 writes), from the typestore.

The text is the type's fields, then each nested type once, depth-first, after a line of 80 ``=`` and
``MSG: <ref>``. References to ``msg`` types are written ``pkg/Name``; types of an ``action``/``srv``
namespace (an action's ``FeedbackMessage`` holds ``pkg/action/X_Feedback``) keep their full name, so that
rosbags re-parses the text to the same RIHS01 hash as the channel's ``topic_type_hash`` (with a shortened
name the hash differs and rosbags' AnyReader refuses the bag). rosbags' own generator asserts on such types,
hence this module. For ``msg`` types the text equals rosbags' ``generate_msgdef(..., ros_version=2)``.
Note: rosidl-grammar parsers (mcap_ros2) reject names with ``_`` such as ``X_FeedbackMessage`` whatever
the spelling; such topics decode with rosbags.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from rosbags.interfaces import Nodetype

SEPARATOR = "=" * 80


def _ref(type_name: str) -> str:
    package, kind, name = type_name.split("/")
    return f"{package}/{name}" if kind == "msg" else type_name


def _base(desc: Any) -> str:
    name, bound = desc
    if name in ("string", "wstring") and bound:
        return f"{name}<={bound}"
    return str(name)


def _body(type_name: str, fielddefs: Any, deps: list[str]) -> str:
    consts, fields = fielddefs[type_name]
    lines = [f"{typ} {name}={value}" for name, typ, value in consts]
    for name, (kind, rest) in fields:
        if name == "structure_needs_at_least_one_member":
            continue
        if kind == Nodetype.BASE:
            lines.append(f"{_base(rest)} {name}")
        elif kind == Nodetype.NAME:
            deps.append(rest)
            lines.append(f"{_ref(rest)} {name}")
        else:
            (elem_kind, elem), size = rest
            count = "" if not size else str(size) if kind == Nodetype.ARRAY else f"<={size}"
            if elem_kind == Nodetype.NAME:
                deps.append(elem)
                lines.append(f"{_ref(elem)}[{count}] {name}")
            else:
                lines.append(f"{_base(elem)}[{count}] {name}")
    return "\n".join(lines) + "\n"


@cache
def message_definition(type_name: str) -> str:
    """The ``ros2msg`` text of ``type_name`` (canonical ``pkg/kind/Name``) followed by its nested types."""
    from nodegraph.interfaces import typestore

    fielddefs = typestore().fielddefs
    pending: list[str] = []
    parts = [_body(type_name, fielddefs, pending)]
    seen = {type_name}
    while pending:
        dep = pending.pop(0)
        if dep in seen:
            continue
        seen.add(dep)
        nested: list[str] = []
        parts.append(f"{SEPARATOR}\nMSG: {_ref(dep)}\n{_body(dep, fielddefs, nested)}")
        pending[:0] = nested  # depth-first, like rosbag2
    return "\n".join(p.rstrip("\n") for p in parts) + "\n"
