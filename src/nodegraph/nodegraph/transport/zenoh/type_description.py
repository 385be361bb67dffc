"""``~/get_type_description`` (type_description_interfaces/srv/GetTypeDescription, REP-2016) for a zenoh node.

Answers for the types the node's publishers, subscriptions, services and clients use, with the same
description its RIHS01 hashes are computed from; another type, or a hash that does not match, is answered
``successful: false`` with the reason, as rclpy's type description service does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nodegraph.interfaces import typestore
from nodegraph.interfaces.hashing import type_description
from nodegraph.interfaces.messages import make

if TYPE_CHECKING:
    from nodegraph.transport.zenoh.node import ZenohNode

SERVICE_TYPE = "type_description_interfaces/srv/GetTypeDescription"
_PKG = "type_description_interfaces/msg/"


def _individual(description: dict[str, Any]) -> Any:
    fields = [
        make(_PKG + "Field", name=f["name"], type=make(_PKG + "FieldType", **f["type"])) for f in description["fields"]
    ]
    return make(_PKG + "IndividualTypeDescription", type_name=description["type_name"], fields=fields)


def type_description_msg(type_name: str) -> Any:
    """type_description_interfaces/msg/TypeDescription of a typestore type (canonical name)."""
    description = type_description(type_name, typestore().fielddefs)
    return make(
        _PKG + "TypeDescription",
        type_description=_individual(description["type_description"]),
        referenced_type_descriptions=[_individual(d) for d in description["referenced_type_descriptions"]],
    )


class TypeDescriptionService:
    """Serves ``~/get_type_description`` from ``node.used_types`` (type name → RIHS01 hash)."""

    def __init__(self, node: ZenohNode) -> None:
        self._node = node
        node.create_service(SERVICE_TYPE, "~/get_type_description", self._on_request)

    def _on_request(self, request: Any, response: Any) -> Any:
        name = str(request.type_name)
        known = self._node.used_types.get(name)
        if known is None:
            response.successful = False
            response.failure_reason = "Type not currently in use by this node"
        elif request.type_hash and request.type_hash != known:
            response.successful = False
            response.failure_reason = "Type hash mismatch"
        else:
            response.successful = True
            response.type_description = type_description_msg(name)
        return response
