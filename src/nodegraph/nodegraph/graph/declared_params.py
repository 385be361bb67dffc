"""Node parameters as frozen dataclasses: every field is declared with its default, read once (the node
template's parameter block, in the runtime so that every package's nodes can use it)."""

from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType
from typing import Any

from nodegraph.graph.api import Node

READ_ONLY = MappingProxyType({"read_only": True})
"""``dataclasses.field(metadata=READ_ONLY)``: this parameter is read-only whatever ``declare_params``' ``read_only``."""


def declare_params[T](node: Node, cls: type[T], defaults: T | None = None, *, read_only: bool = True) -> T:
    """Declare each field of the frozen dataclass ``cls`` as a parameter of ``node`` and return the instance.

    The defaults are ``defaults``' field values (e.g. a config file's), else ``cls()``'s. Tuple fields are declared
    as lists; their items keep the default items' type, and empty strings are dropped (``ros2 launch`` gives
    ``[""]`` for an empty list). They are read once, so they are declared read-only by default: ``so101 param set``
    / ``ros2 param set`` is refused with the reason instead of reporting a change that nothing would apply
    (``read_only=False`` keeps a node's older contract where users set them). A field's
    ``metadata={"read_only": ...}`` (e.g. :data:`READ_ONLY`) overrides ``read_only`` for that field."""
    base = defaults if defaults is not None else cls()
    values: dict[str, Any] = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        default = getattr(base, field.name)
        fixed = bool(field.metadata.get("read_only", read_only))
        if isinstance(default, tuple):
            items = node.declare_parameter(field.name, list(default), read_only=fixed) or ()
            kind = type(default[0]) if default else (lambda v: v)
            values[field.name] = tuple(kind(v) for v in items if v != "")
        else:
            values[field.name] = node.declare_parameter(field.name, default, read_only=fixed)
    return cls(**values)


def check_bounds(
    node_name: str, params: object, *, positive: tuple[str, ...] = (), non_negative: tuple[str, ...] = ()
) -> None:
    """Raise ``ValueError`` naming the first of ``positive`` fields not finite and > 0, or of ``non_negative``
    fields not finite and >= 0 (e.g. ``sim: parameter 'camera_rate_hz' must be > 0, got 0.0``)."""
    for names, bound, ok in ((positive, "> 0", lambda v: v > 0), (non_negative, ">= 0", lambda v: v >= 0)):
        for name in names:
            value = getattr(params, name)
            if not (math.isfinite(value) and ok(value)):
                raise ValueError(f"{node_name}: parameter {name!r} must be {bound}, got {value}")
