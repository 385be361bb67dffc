"""``RclpyNode``: the node interface on a real ``rclpy.node.Node`` (see the package docstring)."""

from __future__ import annotations

import array
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rcl_interfaces.msg import SetParametersResult as RclSetParametersResult
from rclpy.action import ActionClient as RosActionClient
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node as RosNode
from rclpy.parameter import Parameter

from nodegraph.graph import qos as qos_profiles
from nodegraph.graph.api import EndpointInfo, ExecuteCallback, ServerGoalHandle
from nodegraph.graph.parameters import (
    NOT_SET,
    OnSetParametersCallback,
    ParameterError,
    ParameterStore,
    SetParametersResult,
    coerce_to_type,
    type_of,
)
from nodegraph.graph.qos import QoS
from nodegraph.time import sec_nanosec
from nodegraph.transport.rclpy.actions import RclpyActionClient, RclpyServerGoal
from nodegraph.transport.rclpy.context import PROCESS, SHUTDOWN, install_signal_handlers
from nodegraph.transport.rclpy.conversion import from_qos_profile, interface_type, to_qos_profile, typed_array
from nodegraph.transport.rclpy.entities import (
    RclpyClient,
    RclpyLogger,
    RclpyPublisher,
    RclpySubscription,
    RclpyTimer,
    ReceivedInfo,
)
from nodegraph.transport.rclpy.executor import NodeExecutor
from nodegraph.transport.rclpy.fields import element_type, field_value, is_nested

POOL_THREADS = 8  # besides the serial thread: running goals, replies to our clients, the parameter services
SPIN_STOP_S = 1.0  # at least this long for the executor thread to leave its callback at shutdown
SHUTDOWN_TIMEOUT_S = 5.0  # the whole of RclpyNode.shutdown(), below the process's deadline (transport.shutdown)
_SPIN_PERIOD_S = 0.1


class _Counter:
    """How many of something are running (``with counter:``), and waiting until none is."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.count = 0

    def __enter__(self) -> None:
        with self._changed:
            self.count += 1

    def __exit__(self, *exc: object) -> None:
        with self._changed:
            self.count -= 1
            self._changed.notify_all()

    def wait_idle(self, timeout_s: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.count == 0, max(timeout_s, 0.0))


class _CompanionNode:
    """A hidden node beside ``main`` (its context and namespace, no global arguments, no rosout or parameter
    services), on a single-threaded executor of its own thread."""

    def __init__(self, main: RosNode, name: str) -> None:
        self.node = RosNode(name, context=main.context, namespace=main.get_namespace(), use_global_arguments=False,
                            enable_rosout=False, start_parameter_services=False)  # fmt: skip
        self._executor = SingleThreadedExecutor(context=main.context)
        self._executor.add_node(self.node)
        self._halted = threading.Event()
        self._thread = threading.Thread(target=self._spin, name=f"executor:{name}", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._halted.is_set() and self.node.context.ok():
            try:
                self._executor.spin_once(timeout_sec=_SPIN_PERIOD_S)
            except ExternalShutdownException:
                break
            except Exception:
                if not self._halted.is_set():
                    self.node.get_logger().error(f"executor: {traceback.format_exc()}")

    def stop(self, timeout_s: float) -> None:
        self._halted.set()
        self._thread.join(timeout_s)
        self._executor.shutdown(timeout_sec=0.0)


def _plain(value: Any) -> Any:
    """A parameter value as the interface gives it: arrays (rclpy's array.array or tuple) as lists."""
    return list(value) if isinstance(value, array.array | tuple) else value


class _Budget:
    """Seconds left of one timeout shared by several waits."""

    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds

    def left(self) -> float:
        return max(self._end - time.monotonic(), 0.0)


class RclpyNode:
    """A ROS 2 node through rclpy, with the same interface and semantics as ``ZenohNode``.

    ``args`` are the process's arguments without the program name (``--ros-args ...``), as for ``ZenohNode``;
    ``sys.argv`` when ``None``. The first node of the process initializes rclpy with them; later nodes get
    them as their own ``cli_args``. ``context``: an initialized ``rclpy.Context`` of the caller's (a DDS
    participant of its own, as ``ZenohNode``'s ``context`` is a session of its own); the node then gets
    ``args`` as its ``cli_args`` and leaves the context to its owner.
    """

    def __init__(
        self,
        name: str,
        *,
        namespace: str = "",
        args: list[str] | None = None,
        parameter_overrides: dict[str, Any] | None = None,
        start_parameter_services: bool = True,
        enable_rosout: bool = True,
        context: Context | None = None,
    ) -> None:
        self._owns_context = context is None
        first = PROCESS.acquire(args) if context is None else False
        try:
            self._node = RosNode(
                name,
                context=context,
                namespace=namespace or None,
                cli_args=None if first else args,
                parameter_overrides=[Parameter(k, value=v) for k, v in (parameter_overrides or {}).items()],
                start_parameter_services=start_parameter_services,
                enable_rosout=enable_rosout,
            )
        except BaseException:
            if self._owns_context:
                PROCESS.release()
            raise
        self._logger = RclpyLogger(self._node.get_logger())
        self._serial = MutuallyExclusiveCallbackGroup()  # subscriptions, services, timers: one at a time
        self._concurrent = ReentrantCallbackGroup()  # goal execution, replies to our clients
        self._types: dict[str, int] = {}  # declared parameters' ParameterType codes (nodegraph.graph.parameters)
        self._node.add_on_set_parameters_callback(self._check_types)
        self._actions: list[Any] = []
        self._stopping = threading.Event()  # shutdown requested: running goals see a cancel request
        self._halted = threading.Event()  # the executor thread stops spinning
        self._goals = _Counter()  # execute callbacks running
        self._closed = False
        self._close_lock = threading.Lock()
        self._executor = NodeExecutor(self._serial, POOL_THREADS, context=self._node.context, name=name)
        self._executor.add_node(self._node)
        self._node.context.on_shutdown(self.request_shutdown)
        self._clients: _CompanionNode | None = None
        self._thread = threading.Thread(target=self._spin, name=f"executor:{name}", daemon=True)
        self._thread.start()

    # identity
    @property
    def rcl_node(self) -> RosNode:
        """The underlying ``rclpy.node.Node`` (for what the interface does not cover)."""
        return self._node

    @property
    def name(self) -> str:
        return str(self._node.get_name())

    @property
    def namespace(self) -> str:
        return str(self._node.get_namespace())

    @property
    def fully_qualified_name(self) -> str:
        return str(self._node.get_fully_qualified_name())

    @property
    def logger(self) -> RclpyLogger:
        return self._logger

    def resolve(self, name: str) -> str:
        return str(self._node.resolve_topic_name(name))

    def message(self, type_name: str, /, **fields: Any) -> Any:
        """A message with ``fields`` set (nested dicts and lists of dicts allowed), the rest at defaults."""
        cls = interface_type(type_name)
        if not hasattr(cls, "get_fields_and_field_types"):
            raise ValueError(f"{type_name} is a service or action, not a message type")
        known = set(cls.get_fields_and_field_types())
        unknown = set(fields) - known
        if unknown:
            raise ValueError(f"{type_name} has no field(s) {sorted(unknown)}; fields: {sorted(known)}")
        msg = cls()
        types = cls.get_fields_and_field_types()
        for key, value in fields.items():
            setattr(msg, key, self._field(types[key], getattr(msg, key), value))
        return msg

    def _field(self, idl_type: str, default: Any, value: Any) -> Any:
        """``value`` converted for a field of ``idl_type`` by rosidl's rules (``fields``): nested dicts
        become messages, numeric arrays/bytes go straight into ``array.array`` fields, ints into ``byte``
        fields become one byte (``set_message_fields`` would make ``bytes(N)`` of them)."""
        shape = element_type(idl_type)
        elem = shape[1] if shape is not None else idl_type
        if is_nested(elem):

            def build(item: Any) -> Any:
                return self.message(elem, **item) if isinstance(item, Mapping) else item

            return [build(v) for v in value] if shape is not None else build(value)
        if isinstance(default, array.array) and isinstance(value, np.ndarray | bytes | bytearray | memoryview):
            return typed_array(default.typecode, value)
        if isinstance(value, np.ndarray):
            value = value.tolist()
        converted = field_value(idl_type, value.item() if isinstance(value, np.generic) else value)
        return array.array(default.typecode, converted) if isinstance(default, array.array) else converted

    # entities
    def _guard(self, what: str, callback: Callable[..., Any]) -> Callable[..., None]:
        """``callback`` with its exceptions logged, so that one failure does not stop the executor."""

        def guarded(*args: Any) -> None:
            try:
                callback(*args)
            except Exception:
                self._logger.error(f"{what}: callback raised\n{traceback.format_exc()}")

        return guarded

    def create_publisher(self, type_name: str, topic: str, qos: QoS = qos_profiles.DEFAULT) -> RclpyPublisher:
        return RclpyPublisher(self._node.create_publisher(interface_type(type_name), topic, to_qos_profile(qos)))

    def create_subscription(
        self,
        type_name: str,
        topic: str,
        callback: Callable[[Any], None],
        qos: QoS = qos_profiles.DEFAULT,
        *,
        raw: bool = False,
    ) -> RclpySubscription:
        """Subscribe; with ``raw=True`` the callback gets ``(cdr_bytes, ReceivedInfo)`` instead of a message."""
        deliver = self._guard(topic, callback)

        def on_message(msg: Any) -> None:  # one parameter: rclpy then passes no MessageInfo
            deliver(msg)

        def on_raw(msg: Any, info: Any) -> None:  # two: rclpy passes its MessageInfo too
            deliver((bytes(msg), ReceivedInfo.from_rclpy(info)))

        callback_for_rclpy: Callable[..., None] = on_raw if raw else on_message

        subscription = self._node.create_subscription(
            interface_type(type_name),
            topic,
            callback_for_rclpy,
            to_qos_profile(qos),
            callback_group=self._serial,
            raw=raw,
        )
        return RclpySubscription(subscription)

    def create_service(
        self, type_name: str, name: str, callback: Callable[[Any, Any], Any], qos: QoS = qos_profiles.SERVICES
    ) -> Any:
        def on_request(request: Any, response: Any) -> Any:
            try:
                return callback(request, response)
            except Exception:
                details = traceback.format_exc()
                self._logger.error(f"{name}: service callback raised; answering the default response\n{details}")
                return type(response)()

        return self._node.create_service(
            interface_type(type_name),
            name,
            on_request,
            qos_profile=to_qos_profile(qos),
            callback_group=self._serial,
        )

    def _client_node(self) -> RosNode:
        """The hidden companion node ``_<name>_clients`` (created on first use) holding this node's service and
        action clients, spun by its own executor thread: a callback of this node waiting for a reply does not
        hold up the reply (as tf2_ros' listener keeps its subscription on a hidden node of its own)."""
        with self._close_lock:
            if self._clients is None:
                self._clients = _CompanionNode(self._node, f"_{self.name}_clients")
            return self._clients.node

    def create_client(self, type_name: str, name: str, qos: QoS = qos_profiles.SERVICES) -> RclpyClient:
        resolved = self.resolve(name)
        client = self._client_node().create_client(
            interface_type(type_name), resolved, qos_profile=to_qos_profile(qos), callback_group=self._concurrent
        )
        return RclpyClient(client, resolved)

    def create_action_server(
        self,
        type_name: str,
        name: str,
        execute_callback: ExecuteCallback,
        goal_callback: Callable[[Any], bool] | None = None,
        cancel_callback: Callable[[ServerGoalHandle], bool] | None = None,
    ) -> Any:
        """Goals and cancels are accepted unless the callbacks say otherwise (rclpy's default rejects
        cancels; the interface's accepts them)."""
        action_type = interface_type(type_name)

        def on_goal(goal: Any) -> GoalResponse:
            try:
                accepted = goal_callback is None or bool(goal_callback(goal))
            except Exception as exc:
                self._logger.error(f"{name}: goal callback raised {exc!r}; goal rejected")
                accepted = False
            return GoalResponse.ACCEPT if accepted else GoalResponse.REJECT

        def on_cancel(handle: Any) -> CancelResponse:
            try:
                accepted = cancel_callback is None or bool(cancel_callback(RclpyServerGoal(handle, self._stopping)))
            except Exception as exc:
                self._logger.error(f"{name}: cancel callback raised {exc!r}; cancel rejected")
                accepted = False
            return CancelResponse.ACCEPT if accepted else CancelResponse.REJECT

        def execute(handle: Any) -> Any:
            with self._goals:
                return run(handle)

        def run(handle: Any) -> Any:
            try:
                result = execute_callback(RclpyServerGoal(handle, self._stopping))
            except Exception:
                self._logger.error(f"{name}: execute callback raised; goal aborted\n{traceback.format_exc()}")
                result = None
                if handle.is_active:
                    handle.abort()
            if handle.is_active:  # returned without a terminal state: abort, as rclpy (and ZenohNode) do
                self._logger.warning(f"{name}: goal finished without a state; marking it aborted")
                handle.abort()
            return result if result is not None else action_type.Result()

        server = ActionServer(
            self._node,
            action_type,
            name,
            execute_callback=execute,
            goal_callback=on_goal,
            cancel_callback=on_cancel,
            callback_group=self._concurrent,
        )
        self._actions.append(server)
        return server

    def create_action_client(self, type_name: str, name: str) -> RclpyActionClient:
        resolved = self.resolve(name)
        client = RosActionClient(self._client_node(), interface_type(type_name), resolved)
        wrapper = RclpyActionClient(client, resolved, self._guard)
        self._actions.append(wrapper)
        return wrapper

    def create_timer(self, period_s: float, callback: Callable[[], None]) -> Any:
        if period_s <= 0:
            raise ValueError(f"timer period must be > 0 s, got {period_s}")
        run = self._guard("timer", callback)

        def on_timer() -> None:
            run()

        return RclpyTimer(
            self._node.create_timer(period_s, on_timer, callback_group=self._serial), lambda: self._closed
        )

    # parameters
    def declare_parameter(self, name: str, default: Any, *, read_only: bool = False, description: str = "") -> Any:
        """Declare with ``default``; an override must keep its type (an int may widen to a float): the rules of
        ``ZenohNode``, where rclpy's static typing would reject ``-p rate:=30`` for a 30.0 default. The
        parameter is declared dynamically typed (so rclpy takes the override), a widened or read-only one
        declared again with its final value, and a later set of another type is refused (``_check_types``)."""
        descriptor = ParameterDescriptor(dynamic_typing=True, description=description)
        given = _plain(self._node.declare_parameter(name, default, descriptor).value)
        if given is None and isinstance(default, list | tuple):  # rcl reads `-p name:=[]` as not set: an empty list
            given = []
        value = ParameterStore({name: given}).declare(name, default)  # ParameterError when the type differs
        if read_only or type(value) is not type(given):
            self._node.undeclare_parameter(name)
            final = ParameterDescriptor(dynamic_typing=True, read_only=read_only, description=description)
            self._node.declare_parameter(name, value, final, ignore_override=True)
        hint = type_of(default) if default is not None else NOT_SET
        self._types[name] = type_of(value, hint)
        return value

    def _check_types(self, params: list[Any]) -> RclSetParametersResult:
        """rclpy's on-set callback refusing a change of a declared parameter's type (ZenohNode's rule and reason)."""
        for param in params:
            if param.name in self._types:
                try:
                    coerce_to_type(param.name, _plain(param.value), self._types[param.name])
                except ParameterError as exc:
                    return RclSetParametersResult(successful=False, reason=str(exc))
        return RclSetParametersResult(successful=True)

    def get_parameter(self, name: str) -> Any:
        """The current value (rclpy's, so a ``ros2 param set`` is seen; an int set on a double reads as float)."""
        value = _plain(self._node.get_parameter(name).value)
        declared = self._types.get(name, NOT_SET)
        return coerce_to_type(name, value, declared) if value is not None else value

    def set_parameters(self, values: Mapping[str, Any]) -> list[SetParametersResult]:
        """Set each parameter through rclpy (its callbacks asked, ``/parameter_events`` published)."""
        results = self._node.set_parameters([Parameter(k, value=v) for k, v in values.items()])
        return [SetParametersResult(bool(r.successful), str(r.reason)) for r in results]

    def add_on_set_parameters_callback(self, callback: OnSetParametersCallback) -> None:
        """rclpy's callback of that name, with the interface's ``{name: value}`` → SetParametersResult."""

        def on_set(params: list[Any]) -> Any:
            result = callback({p.name: p.value for p in params})
            return RclSetParametersResult(successful=result.successful, reason=result.reason)

        self._node.add_on_set_parameters_callback(on_set)

    # clock
    def now_ns(self) -> int:
        """ROS time in ns: ``/clock`` when ``use_sim_time`` is true, else the system clock."""
        return int(self._node.get_clock().now().nanoseconds)

    def stamp(self, ns: int | None = None) -> Any:
        if ns is None:
            return self._node.get_clock().now().to_msg()
        sec, nanosec = sec_nanosec(ns)
        return interface_type("builtin_interfaces/msg/Time")(sec=sec, nanosec=nanosec)

    # graph
    def topic_names_and_types(self) -> dict[str, set[str]]:
        return {name: set(types) for name, types in self._node.get_topic_names_and_types()}

    def _endpoints(self, infos: list[Any], kind: str) -> list[EndpointInfo]:
        return [
            EndpointInfo(
                node_name=str(i.node_name),
                node_namespace=str(i.node_namespace),
                topic_type=str(i.topic_type),
                topic_type_hash=str(getattr(i, "topic_type_hash", "")),
                endpoint_type="PUBLISHER" if kind == "PUBLISHER" else "SUBSCRIPTION",
                gid=bytes(i.endpoint_gid),
                qos=from_qos_profile(i.qos_profile),
            )
            for i in infos
        ]

    def publishers_info_by_topic(self, topic: str) -> list[EndpointInfo]:
        """rclpy's ``get_publishers_info_by_topic``."""
        return self._endpoints(self._node.get_publishers_info_by_topic(self.resolve(topic)), "PUBLISHER")

    def subscriptions_info_by_topic(self, topic: str) -> list[EndpointInfo]:
        """rclpy's ``get_subscriptions_info_by_topic``."""
        return self._endpoints(self._node.get_subscriptions_info_by_topic(self.resolve(topic)), "SUBSCRIPTION")

    # lifecycle
    def _spin(self) -> None:
        """``executor.spin()``, but a callback error surfacing here is logged instead of ending the loop; runs
        until ``shutdown()`` halts it (after a shutdown request, so that running goals can still end)."""
        while not self._halted.is_set() and self._node.context.ok():
            try:
                self._executor.spin_once(timeout_sec=_SPIN_PERIOD_S)
            except ExternalShutdownException:
                break
            except Exception:
                if not self._halted.is_set():
                    self._logger.error(f"executor: {traceback.format_exc()}")
        self._stopping.set()

    @property
    def is_shutdown(self) -> bool:
        return self._stopping.is_set()

    def request_shutdown(self) -> None:
        self._stopping.set()

    def spin(self) -> None:
        """Block until shutdown; SIGINT/SIGTERM shut the node down cleanly (when spun on the main thread)."""
        install_signal_handlers()
        while not self._stopping.wait(0.1) and not SHUTDOWN.is_set():
            pass
        self.shutdown()

    def shutdown(self) -> None:
        """Stop the node within ``SHUTDOWN_TIMEOUT_S``: running goals see a cancel request and end (their
        clients get the result while the executor still spins), the executor stops and its running callbacks
        finish, then the node is destroyed and rclpy shut down if this was its last node. What is still
        running after the timeout is logged and left behind (the process-level deadline bounds the rest).

        Not from a callback (the executor would wait for it): call ``request_shutdown()`` there."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        budget = _Budget(SHUTDOWN_TIMEOUT_S)
        self._stopping.set()
        if not self._goals.wait_idle(budget.left()):
            self._logger.warning(f"shutdown: {self._goals.count} goal(s) still executing; stopping anyway")
        elif self._actions:
            self._executor.settle(budget.left())  # the ended goals' results reach their clients
        self._halted.set()  # no new callbacks: the executor thread stops spinning
        # its running callback ends before the node is destroyed, even when the goals used up the budget (a
        # timer publishing into a destroyed publisher raised InvalidHandle in CI)
        self._thread.join(max(budget.left(), SPIN_STOP_S))
        if self._thread.is_alive():
            self._logger.warning(f"shutdown: the executor thread still runs after {SPIN_STOP_S:g} s")
        # the callbacks already handed out end before Executor.shutdown() destroys what they use
        if running := self._executor.wait_idle(budget.left()):
            self._logger.warning(f"shutdown: {running} callback(s) still running; destroying the node anyway")
        self._executor.shutdown(timeout_sec=budget.left())
        if self._clients is not None:
            self._clients.stop(budget.left())
        for action in reversed(self._actions):
            action.destroy()
        self._node.destroy_node()
        if self._clients is not None:
            self._clients.node.destroy_node()
        if self._owns_context:
            PROCESS.release()

    def __enter__(self) -> RclpyNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
