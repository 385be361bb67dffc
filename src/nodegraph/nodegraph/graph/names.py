"""Topic and service name resolution: namespaces, private names and remapping, as rcl does it."""

from __future__ import annotations

import re
from collections.abc import Mapping

_VALID = re.compile(r"^(~/|/)?[A-Za-z_][A-Za-z0-9_/]*$")


class InvalidNameError(ValueError):
    """A topic, service or node name is invalid."""


def join_namespace(namespace: str, name: str) -> str:
    namespace = "/" + namespace.strip("/") if namespace.strip("/") else ""
    return f"{namespace}/{name}"


def resolve_name(name: str, node_name: str, namespace: str, remaps: Mapping[str, str] | None = None) -> str:
    """Fully qualified name of ``name`` for node ``node_name`` in ``namespace``, after remapping."""
    if not name or not _VALID.match(name) or "//" in name or (name.endswith("/") and name != "/"):
        raise InvalidNameError(f"invalid topic or service name {name!r}")
    if name.startswith("/"):
        resolved = name
    elif name.startswith("~"):
        resolved = join_namespace(namespace, node_name) + name[1:]
    else:
        resolved = join_namespace(namespace, name)
    if remaps:
        for source, target in remaps.items():
            if resolve_name(source, node_name, namespace) == resolved:
                return resolve_name(target, node_name, namespace)
    return resolved
