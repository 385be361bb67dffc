"""``ZenohNode``: the node interface over zenoh, wire-compatible with rmw_zenoh_cpp (Jazzy)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from nodegraph.graph import qos as qos_profiles
from nodegraph.graph.api import EndpointInfo, ExecuteCallback, ServerGoalHandle
from nodegraph.graph.arguments import parse_ros_arguments
from nodegraph.graph.names import resolve_name
from nodegraph.graph.parameters import (
    OnSetParametersCallback,
    ParameterStore,
    SetParametersResult,
    parameters_from_file,
)
from nodegraph.graph.qos import QoS
from nodegraph.interfaces.messages import make, time_message
from nodegraph.time import to_ns
from nodegraph.transport.log import NodeLogger, node_logger
from nodegraph.transport.zenoh.actions import ZenohActionClient, ZenohActionServer
from nodegraph.transport.zenoh.context import SHUTDOWN, Context, install_signal_handlers
from nodegraph.transport.zenoh.entities import (
    Entity,
    ZenohClient,
    ZenohPublisher,
    ZenohService,
    ZenohSubscription,
    ZenohTimer,
)
from nodegraph.transport.zenoh.executor import Executor
from nodegraph.transport.zenoh.keyexpr import NodeToken, dds_to_ros_type, gid
from nodegraph.transport.zenoh.parameter_services import ParameterEvents, ParameterServices
from nodegraph.transport.zenoh.rosout import RosoutHandler
from nodegraph.transport.zenoh.type_description import TypeDescriptionService


def _normalize_namespace(namespace: str) -> str:
    stripped = namespace.strip("/")
    return "/" + stripped if stripped else "/"


class ZenohNode:
    """A ROS 2 node without ROS: parameters, pub/sub, services, actions, timers, clock and logger.

    ``args`` are the process's ROS arguments (``--ros-args ...``); ``sys.argv[1:]`` when ``None``.
    Like an rclpy node it has ``/rosout`` (``enable_rosout``), ``/parameter_events``, the parameter services
    and ``~/get_type_description`` (``start_parameter_services``); the CLI's short-lived nodes leave them out.
    """

    def __init__(
        self,
        name: str,
        *,
        namespace: str = "",
        args: list[str] | None = None,
        parameter_overrides: dict[str, Any] | None = None,
        context: Context | None = None,
        start_parameter_services: bool = True,
        enable_rosout: bool = True,
    ) -> None:
        ros = parse_ros_arguments(sys.argv[1:] if args is None else args)
        self._name = ros.node_name or name
        self._namespace = _normalize_namespace(ros.namespace or namespace)
        self._remaps = ros.remaps
        fqn = self.fully_qualified_name
        overrides: dict[str, Any] = {}
        for path in ros.params_files:
            overrides.update(parameters_from_file(path, fqn))
        overrides.update(ros.parameters)
        overrides.update(parameter_overrides or {})
        self._parameters = ParameterStore(overrides)
        self._log = node_logger(fqn, ros.log_level)
        self._logger = NodeLogger(self._log)
        self.context = context or Context.get()
        self.context.attach()
        self.token = NodeToken(
            self.context.domain_id,
            self.context.zid,
            self.context.next_entity_id(),
            self._namespace,
            self._name,
        )
        self._token = self.context.session.liveliness().declare_token(self.token.key())
        self.executor = Executor(self._log, self._name)
        self._entities: list[Entity | ZenohActionServer | ZenohActionClient] = []
        self.used_types: dict[str, str] = {}
        """Types of this node's entities (name → RIHS01 hash), for ``~/get_type_description``."""
        self._shutdown = threading.Event()
        self._closed = False
        self._use_sim_time = False
        self._sim_time_ns: int | None = None  # the last /clock reading; None before the first
        self._rosout: RosoutHandler | None = None
        if enable_rosout:
            self._rosout = RosoutHandler(self)
            self._log.addHandler(self._rosout)
        if start_parameter_services:
            ParameterEvents(self, self._parameters)
            ParameterServices(self, self._parameters)
            TypeDescriptionService(self)
        if self.declare_parameter("use_sim_time", False):
            self._use_sim_time = True
            self.create_subscription("rosgraph_msgs/msg/Clock", "/clock", self._on_clock, qos_profiles.CLOCK)

    # identity
    @property
    def name(self) -> str:
        return self._name

    @property
    def namespace(self) -> str:
        return self._namespace

    @property
    def fully_qualified_name(self) -> str:
        return f"{self._namespace.rstrip('/')}/{self._name}"

    @property
    def logger(self) -> NodeLogger:
        return self._logger

    def resolve(self, name: str) -> str:
        return resolve_name(name, self._name, self._namespace, self._remaps)

    def message(self, type_name: str, /, **fields: Any) -> Any:
        return make(type_name, **fields)

    # entities
    def _track(self, entity: Any) -> Any:
        self._entities.append(entity)
        return entity

    def create_publisher(self, type_name: str, topic: str, qos: QoS = qos_profiles.DEFAULT) -> ZenohPublisher:
        return self._track(ZenohPublisher(self, type_name, self.resolve(topic), qos))

    def create_subscription(
        self,
        type_name: str,
        topic: str,
        callback: Callable[[Any], None],
        qos: QoS = qos_profiles.DEFAULT,
        *,
        raw: bool = False,
    ) -> ZenohSubscription:
        """Subscribe; with ``raw=True`` the callback gets ``(cdr_bytes, attachment)`` instead of a message."""
        return self._track(ZenohSubscription(self, type_name, self.resolve(topic), callback, qos, raw))

    def create_service(
        self, type_name: str, name: str, callback: Callable[[Any, Any], Any], qos: QoS = qos_profiles.SERVICES
    ) -> ZenohService:
        return self._track(ZenohService(self, type_name, self.resolve(name), callback, qos))

    def create_client(self, type_name: str, name: str, qos: QoS = qos_profiles.SERVICES) -> ZenohClient:
        return self._track(ZenohClient(self, type_name, self.resolve(name), qos))

    def create_action_server(
        self,
        type_name: str,
        name: str,
        execute_callback: ExecuteCallback,
        goal_callback: Callable[[Any], bool] | None = None,
        cancel_callback: Callable[[ServerGoalHandle], bool] | None = None,
    ) -> ZenohActionServer:
        server = ZenohActionServer(
            self, type_name, self.resolve(name), execute_callback, goal_callback, cancel_callback
        )
        return self._track(server)

    def create_action_client(self, type_name: str, name: str) -> ZenohActionClient:
        return self._track(ZenohActionClient(self, type_name, self.resolve(name)))

    def create_timer(self, period_s: float, callback: Callable[[], None]) -> ZenohTimer:
        """Call ``callback`` every ``period_s`` s of ROS time: ``/clock`` time when ``use_sim_time`` is true (no
        firing before the first ``/clock`` message), else the monotonic wall clock."""
        timer = ZenohTimer(period_s, callback, self._clock_ns if self._use_sim_time else None)
        self.executor.add_timer(timer)
        return timer

    # parameters
    def declare_parameter(self, name: str, default: Any, *, read_only: bool = False, description: str = "") -> Any:
        """Declare ``name`` and return its value (the override, else ``default``); ``read_only`` refuses
        every later change (``ros2 param set``), as rclpy's ``ParameterDescriptor(read_only=True)``."""
        return self._parameters.declare(name, default, read_only=read_only, description=description)

    def get_parameter(self, name: str) -> Any:
        """The current value of a declared parameter."""
        return self._parameters.get(name)

    def set_parameters(self, values: Mapping[str, Any]) -> list[SetParametersResult]:
        """Set each parameter as ``~/set_parameters`` does (callbacks asked, events published)."""
        return self._parameters.set(values)

    def add_on_set_parameters_callback(self, callback: OnSetParametersCallback) -> None:
        """``callback(new values)`` decides whether a change is accepted (rclpy's callback of that name)."""
        self._parameters.add_on_set_callback(callback)

    # clock
    def _on_clock(self, msg: Any) -> None:
        self._sim_time_ns = to_ns(msg.clock)

    def _clock_ns(self) -> int | None:
        """The last ``/clock`` reading in ns; None before the first message."""
        return self._sim_time_ns

    def now_ns(self) -> int:
        """ROS time in ns: ``/clock`` when ``use_sim_time`` is true (0 before the first message, as rclpy), else
        the system clock."""
        if self._use_sim_time:
            return self._sim_time_ns or 0
        return time.time_ns()

    def stamp(self, ns: int | None = None) -> Any:
        """builtin_interfaces/Time of ``ns`` (default: ``now_ns()``)."""
        return time_message(self.now_ns() if ns is None else ns)

    # graph
    def topic_names_and_types(self) -> dict[str, set[str]]:
        """Topics seen on the graph (from liveliness tokens) with their type names."""
        topics: dict[str, set[str]] = {}
        for token in self.context.graph.tokens():
            if token.kind in ("MP", "MS"):
                topics.setdefault(token.name, set()).add(dds_to_ros_type(token.dds_type))
        return topics

    def _endpoints(self, topic: str, kind: str) -> list[EndpointInfo]:
        resolved = self.resolve(topic)
        return [
            EndpointInfo(
                node_name=t.node_name,
                node_namespace=t.namespace,
                topic_type=dds_to_ros_type(t.dds_type),
                topic_type_hash=t.type_hash,
                endpoint_type="PUBLISHER" if kind == "MP" else "SUBSCRIPTION",
                gid=gid(key),
                qos=t.qos or QoS(),
            )
            for key, t in self.context.graph.keyed_tokens()
            if t.kind == kind and t.name == resolved
        ]

    def publishers_info_by_topic(self, topic: str) -> list[EndpointInfo]:
        """The publishers of ``topic`` on the graph, with their offered QoS (rclpy's
        ``get_publishers_info_by_topic``)."""
        return self._endpoints(topic, "MP")

    def subscriptions_info_by_topic(self, topic: str) -> list[EndpointInfo]:
        """The subscriptions of ``topic`` on the graph, with their requested QoS."""
        return self._endpoints(topic, "MS")

    # lifecycle
    @property
    def is_shutdown(self) -> bool:
        return self._shutdown.is_set()

    def spin(self) -> None:
        """Block until shutdown; SIGINT/SIGTERM shut the node down cleanly (when called from the main thread)."""
        install_signal_handlers()
        while not self._shutdown.wait(0.1) and not SHUTDOWN.is_set():
            pass
        self.shutdown()

    def request_shutdown(self) -> None:
        self._shutdown.set()

    def shutdown(self) -> None:
        """End running goals (they see a cancel request), stop the executor, undeclare every entity and the node
        token; the process-wide context closes with its last node (an explicitly given context is closed by its
        owner)."""
        if self._closed:
            return
        self._closed = True
        self._shutdown.set()
        servers = [e for e in self._entities if isinstance(e, ZenohActionServer)]
        for server in servers:  # running goals see a cancel request and end while callbacks still run
            server.stopping.set()
        for server in servers:
            server.close()
        self.executor.stop()
        for entity in reversed(self._entities):
            if isinstance(entity, ZenohActionServer):
                continue
            try:
                entity.close()
            except Exception as exc:  # the session may already be gone
                self._logger.debug(f"closing {entity}: {exc!r}")
        if self._rosout is not None:
            self._log.removeHandler(self._rosout)
        self._token.undeclare()
        self.context.detach()

    def __enter__(self) -> ZenohNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
