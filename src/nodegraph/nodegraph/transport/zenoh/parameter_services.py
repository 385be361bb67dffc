"""A zenoh node's parameter services and ``/parameter_events``, as rclpy's ``ParameterService`` offers them.

Services (under the node's fully qualified name): ``~/list_parameters``, ``~/get_parameters``,
``~/set_parameters``, ``~/describe_parameters``, ``~/get_parameter_types``, ``~/set_parameters_atomically``
(rcl_interfaces/srv/*). Each declaration and each accepted change is published on ``/parameter_events``
(rcl_interfaces/msg/ParameterEvent, depth 1000, reliable, volatile: rclpy's ``qos_profile_parameter_events``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from nodegraph.graph.parameters import ParameterStore
from nodegraph.graph.qos import QoS
from nodegraph.interfaces.messages import make
from nodegraph.interfaces.parameter_values import from_value_msg, parameter_msg, to_value_msg

if TYPE_CHECKING:
    from nodegraph.transport.zenoh.node import ZenohNode

PARAMETER_EVENTS = "/parameter_events"
PARAMETER_EVENTS_QOS = QoS(depth=1000)
SRV = "rcl_interfaces/srv/"


class ParameterEvents:
    """Publishes ``/parameter_events`` for one node's store."""

    def __init__(self, node: ZenohNode, store: ParameterStore) -> None:
        self._node = node
        self._store = store
        self._publisher = node.create_publisher("rcl_interfaces/msg/ParameterEvent", PARAMETER_EVENTS,
                                                PARAMETER_EVENTS_QOS)  # fmt: skip
        store.add_on_changed(self.publish)

    def publish(self, new: dict[str, Any], changed: dict[str, Any]) -> None:
        def params(values: dict[str, Any]) -> list[Any]:
            return [parameter_msg(n, v, self._store.descriptor(n).type) for n, v in values.items()]

        event = make(
            "rcl_interfaces/msg/ParameterEvent",
            stamp=self._node.stamp(),
            node=self._node.fully_qualified_name,
            new_parameters=params(new),
            changed_parameters=params(changed),
        )
        self._publisher.publish(event)


class ParameterServices:
    """The six parameter services of one node, answering from its ``ParameterStore``."""

    def __init__(self, node: ZenohNode, store: ParameterStore) -> None:
        self._store = store
        handlers = {
            "list_parameters": ("ListParameters", self._list),
            "get_parameters": ("GetParameters", self._get),
            "set_parameters": ("SetParameters", self._set),
            "describe_parameters": ("DescribeParameters", self._describe),
            "get_parameter_types": ("GetParameterTypes", self._types),
            "set_parameters_atomically": ("SetParametersAtomically", self._set_atomically),
        }
        for name, (type_name, callback) in handlers.items():
            node.create_service(SRV + type_name, f"~/{name}", callback)

    def _declared(self, names: Any) -> list[str] | None:
        """``names`` as a list, or None when one is undeclared (rclpy then answers an empty list)."""
        names = list(names)
        return names if all(self._store.has(n) for n in names) else None

    def _list(self, request: Any, response: Any) -> Any:
        names = self._store.names(list(request.prefixes), int(request.depth))
        prefixes = sorted({n.rsplit(".", 1)[0] for n in names if "." in n})
        response.result = make("rcl_interfaces/msg/ListParametersResult", names=names, prefixes=prefixes)
        return response

    def _get(self, request: Any, response: Any) -> Any:
        names = self._declared(request.names) or []
        response.values = [to_value_msg(self._store.get(n), self._store.descriptor(n).type) for n in names]
        return response

    def _describe(self, request: Any, response: Any) -> Any:
        names = self._declared(request.names) or []
        descriptors = []
        for name in names:
            d = self._store.descriptor(name)
            descriptors.append(make("rcl_interfaces/msg/ParameterDescriptor", name=d.name, type=d.type,
                                    description=d.description, read_only=d.read_only))  # fmt: skip
        response.descriptors = descriptors
        return response

    def _types(self, request: Any, response: Any) -> Any:
        names = self._declared(request.names) or []
        response.types = np.array([self._store.descriptor(n).type for n in names], dtype=np.uint8)
        return response

    @staticmethod
    def _result(result: Any) -> Any:
        return make("rcl_interfaces/msg/SetParametersResult", successful=result.successful, reason=result.reason)

    def _set(self, request: Any, response: Any) -> Any:
        results = [self._store.set_atomically({p.name: from_value_msg(p.value)}) for p in request.parameters]
        response.results = [self._result(r) for r in results]
        return response

    def _set_atomically(self, request: Any, response: Any) -> Any:
        values = {p.name: from_value_msg(p.value) for p in request.parameters}
        response.result = self._result(self._store.set_atomically(values))
        return response
