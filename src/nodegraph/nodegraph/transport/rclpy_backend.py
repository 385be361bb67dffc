"""``RclpyNode``: the node interface (``nodegraph.graph.api``) on a real ``rclpy.node.Node``.

UNVERIFIED HERE: this machine has no ROS 2 (rclpy is in no reachable registry), so this module has only been
compiled, linted and type-checked (rclpy as ``Any``), never imported or run; it has no tests on purpose (a
fake rclpy would only test the fake). A ROS 2 Jazzy user verifies it with::

    source /opt/ros/jazzy/setup.bash
    colcon build --symlink-install && source install/setup.bash
    python3 -c "from nodegraph.transport.runtime import backend_name as b; print(b())"   # rclpy
    SO101_TRANSPORT=rclpy ros2 launch launch/demo.launch.py rate:=50
    ros2 node list; ros2 topic hz /joint_states; ros2 param get /joint_state_source rate_hz
    # Ctrl-C the launch: every node exits with code 0 and the recorder's bag is closed (ros2 bag info)
    ros2 run so101_nodes joint_state_source --ros-args -p rate_hz:=-1; echo $?     # 1, error logged

and, for services and actions, ``ros2 service call`` / ``ros2 action send_goal --feedback`` against a node
offering them (Ctrl-C during a goal: the server reports CANCELED).

How the interface maps onto rclpy, written the way ros2/examples and ros2/demos write nodes:

- ``rclpy.init`` once per process (with the node's arguments), ``rclpy.try_shutdown`` when the last
  ``RclpyNode`` this module started it for shuts down. Signals are ours (``SignalHandlerOptions.NO``):
  ``spin()`` turns SIGINT/SIGTERM into a clean shutdown of every node, as ``ZenohNode.spin`` does.
- One ``MultiThreadedExecutor`` per node, spun on a background thread. Subscriptions, services and timers
  share one ``MutuallyExclusiveCallbackGroup`` (one callback at a time, like the zenoh executor); action
  servers, action clients and service clients use a ``ReentrantCallbackGroup``, so goals execute
  concurrently and a callback may wait on a service or action reply without deadlocking the executor (as
  long as a pool thread is free: ``EXECUTOR_THREADS``).
- Callback exceptions are logged and the node keeps running (as in ``ZenohNode``); a failing service
  callback answers the default response (rclpy cannot leave a request unanswered).
- ``use_sim_time`` is rclpy's own parameter; with it, ``now_ns``/``stamp`` and timers follow ``/clock``.
"""

from __future__ import annotations

import array
import functools
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import rclpy
from action_msgs.srv import CancelGoal
from rcl_interfaces.msg import ParameterDescriptor
from rcl_interfaces.msg import SetParametersResult as RclSetParametersResult
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node as RosNode
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rosidl_runtime_py.utilities import get_action, get_message, get_service

from nodegraph.graph import qos as qos_profiles
from nodegraph.graph.api import EndpointInfo, ExecuteCallback, GoalStatus, GraphError, ServerGoalHandle, ServiceTimeout
from nodegraph.graph.parameters import OnSetParametersCallback, ParameterStore, SetParametersResult
from nodegraph.graph.qos import QoS
from nodegraph.transport.rclpy_fields import element_type, field_value, is_nested

EXECUTOR_THREADS = 8  # concurrent callbacks per node: running goals + waiting callers + deliveries
SHUTDOWN_TIMEOUT_S = 5.0
_POLL_S = 0.05

# pkg/action/Name_<suffix> → attribute path on the generated action class
_ACTION_PARTS = {
    "Goal": ("Goal",),
    "Result": ("Result",),
    "Feedback": ("Feedback",),
    "FeedbackMessage": ("Impl", "FeedbackMessage"),
    "SendGoal_Request": ("Impl", "SendGoalService", "Request"),
    "SendGoal_Response": ("Impl", "SendGoalService", "Response"),
    "GetResult_Request": ("Impl", "GetResultService", "Request"),
    "GetResult_Response": ("Impl", "GetResultService", "Response"),
}


@functools.cache
def interface_type(type_name: str) -> Any:
    """The generated class of ``pkg/msg/Name`` (or ``pkg/Name``), ``pkg/srv/Name[_Request|_Response]``,
    ``pkg/action/Name[_Goal|_Result|_Feedback|...]``: the same names the zenoh backend accepts."""
    parts = type_name.strip().strip("/").split("/")
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3 or parts[1] not in ("msg", "srv", "action") or not all(parts):
        raise ValueError(f"malformed interface name {type_name!r}: expected pkg/msg|srv|action/Name")
    pkg, kind, name = parts
    if kind == "msg":
        return get_message(f"{pkg}/msg/{name}")
    base, _, suffix = name.partition("_")
    if kind == "srv":
        service = get_service(f"{pkg}/srv/{base}")
        if suffix in ("", "Request", "Response"):
            return getattr(service, suffix) if suffix else service
    else:
        action = get_action(f"{pkg}/action/{base}")
        if not suffix:
            return action
        if suffix in _ACTION_PARTS:
            return functools.reduce(getattr, _ACTION_PARTS[suffix], action)
    raise ValueError(f"{type_name!r}: {pkg}/{kind}/{base} has no part {suffix!r}")


def to_qos_profile(qos: QoS) -> QoSProfile:
    """Our ``QoS`` as an rclpy ``QoSProfile`` (deadline, lifespan and liveliness stay at their defaults)."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST if qos.history == "keep_last" else HistoryPolicy.KEEP_ALL,
        depth=qos.depth,
        reliability=(ReliabilityPolicy.RELIABLE if qos.reliability == "reliable" else ReliabilityPolicy.BEST_EFFORT),
        durability=(
            DurabilityPolicy.TRANSIENT_LOCAL if qos.durability == "transient_local" else DurabilityPolicy.VOLATILE
        ),
    )


def from_qos_profile(profile: Any) -> QoS:
    """An rclpy ``QoSProfile`` as our ``QoS``."""
    return QoS(
        depth=int(profile.depth),
        reliability="best_effort" if profile.reliability == ReliabilityPolicy.BEST_EFFORT else "reliable",
        durability="transient_local" if profile.durability == DurabilityPolicy.TRANSIENT_LOCAL else "volatile",
        history="keep_all" if profile.history == HistoryPolicy.KEEP_ALL else "keep_last",
    )


def _is_message(value: Any) -> bool:
    return hasattr(type(value), "get_fields_and_field_types")


def _typed_array(typecode: str, value: Any) -> array.array[Any]:
    """``value`` (numpy array or bytes, which count as uint8 values) as an ``array.array`` of ``typecode``."""
    if isinstance(value, bytes | bytearray | memoryview):
        value = np.frombuffer(value, dtype=np.uint8)
    out: array.array[Any] = array.array(typecode)
    out.frombytes(np.ascontiguousarray(value, dtype=np.dtype(typecode)).reshape(-1).tobytes())
    return out


def _wait(future: Any, timeout_s: float | None) -> bool:
    """Wait (off the executor) for an rclpy future; True when done. Polls too, since the executor runs done
    callbacks as tasks, which may queue behind busy threads."""
    done = threading.Event()
    future.add_done_callback(lambda _future: done.set())
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not future.done():
        remaining = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
        if remaining <= 0:
            return False
        done.wait(remaining)
    return True


class _ProcessContext:
    """``rclpy.init`` once per process; ``rclpy.try_shutdown`` after the last node it was started for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._owned = False

    def acquire(self, args: list[str] | None) -> bool:
        """Count a node in; True when this call initialized rclpy (with ``args``, the process arguments)."""
        with self._lock:
            first = not rclpy.ok()
            if first:
                # rcl reads argv like a C main's: program name first
                argv = None if args is None else [sys.argv[0] if sys.argv else "so101", *args]
                rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
                self._owned = True
            self._users += 1
            return first

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._owned:
                self._owned = False
                rclpy.try_shutdown()


_PROCESS = _ProcessContext()

SHUTDOWN = threading.Event()
"""Set by SIGINT/SIGTERM once ``install_signal_handlers`` ran; every ``RclpyNode.spin`` then returns."""


def install_signal_handlers() -> None:
    """Make SIGINT/SIGTERM request a clean shutdown of the process's nodes; main thread only, idempotent."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: SHUTDOWN.set())


class RclpyLogger:
    """``node.get_logger()`` with the interface's ``debug/info/warning/error(str, throttle_duration_sec=...,
    once=..., skip_first=...)`` (rclpy's own keyword arguments, passed through)."""

    def __init__(self, logger: Any) -> None:
        self._logger = logger

    def debug(self, msg: str, **throttle: Any) -> None:
        """Log at DEBUG."""
        self._logger.debug(msg, **throttle)

    def info(self, msg: str, **throttle: Any) -> None:
        """Log at INFO."""
        self._logger.info(msg, **throttle)

    def warning(self, msg: str, **throttle: Any) -> None:
        """Log at WARN."""
        self._logger.warning(msg, **throttle)

    def error(self, msg: str, **throttle: Any) -> None:
        """Log at ERROR."""
        self._logger.error(msg, **throttle)


class RclpyTimer:
    """An rclpy timer whose ``cancel()`` is a no-op once the node is destroyed (rclpy would raise
    InvalidHandle, e.g. from a node logic's ``close()`` after ``run_node`` shut the node down)."""

    def __init__(self, timer: Any, closed: Callable[[], bool]) -> None:
        self._timer = timer
        self._closed = closed

    def cancel(self) -> None:
        """Stop the timer."""
        if not self._closed():
            self._timer.cancel()


class RclpyPublisher:
    def __init__(self, publisher: Any) -> None:
        self._publisher = publisher
        self.topic: str = publisher.topic_name

    def publish(self, msg: Any) -> None:
        self._publisher.publish(msg)

    def publish_raw(self, cdr: bytes) -> None:
        """Publish an already serialized message (CDR with its 4-byte header)."""
        self._publisher.publish(cdr)


class RclpySubscription:
    def __init__(self, subscription: Any) -> None:
        self._subscription = subscription
        self.topic: str = subscription.topic_name


class RclpyClient:
    """Service client: ``call_async``, then wait on the future off the executor."""

    def __init__(self, client: Any, name: str) -> None:
        self._client = client
        self.name = name

    def wait_for_service(self, timeout_s: float) -> bool:
        return bool(self._client.wait_for_service(timeout_sec=timeout_s))

    def call(self, request: Any, timeout_s: float = 10.0) -> Any:
        future = self._client.call_async(request)
        if not _wait(future, timeout_s):
            self._client.remove_pending_request(future)
            raise ServiceTimeout(f"service {self.name} did not answer within {timeout_s} s")
        return future.result()


class RclpyServerGoal:
    """The interface's ``ServerGoalHandle`` over rclpy's; a node shutting down reads as a cancel request."""

    def __init__(self, handle: Any, stopping: threading.Event) -> None:
        self._handle = handle
        self._stopping = stopping
        self.goal_id = bytes(handle.goal_id.uuid)
        self.request = handle.request

    @property
    def is_cancel_requested(self) -> bool:
        return bool(self._handle.is_cancel_requested) or self._stopping.is_set()

    def publish_feedback(self, feedback: Any) -> None:
        self._handle.publish_feedback(feedback)

    def succeed(self) -> None:
        self._handle.succeed()

    def abort(self) -> None:
        self._handle.abort()

    def canceled(self) -> None:
        if self._handle.is_cancel_requested:
            self._handle.canceled()
        else:  # stopped by our shutdown, not by a client: rcl_action only allows CANCELED after CANCELING
            self._handle.abort()


class RclpyClientGoal:
    """The interface's ``ClientGoal`` over rclpy's ``ClientGoalHandle``; the result is requested at once."""

    def __init__(self, handle: Any, name: str) -> None:
        self._handle = handle
        self._name = name
        self.goal_id = bytes(handle.goal_id.uuid)
        self.accepted = bool(handle.accepted)
        self._result = handle.get_result_async() if self.accepted else None

    @property
    def status(self) -> GoalStatus:
        if self._result is not None and self._result.done() and self._result.result() is not None:
            return GoalStatus(int(self._result.result().status))
        status = GoalStatus(int(self._handle.status))
        return GoalStatus.ACCEPTED if self.accepted and status == GoalStatus.UNKNOWN else status

    def done(self) -> bool:
        return self._result is None or bool(self._result.done())

    def result(self, timeout_s: float | None = None) -> tuple[GoalStatus, Any]:
        """``(status, result message)``; raises ServiceTimeout if not finished within ``timeout_s``."""
        if self._result is None:
            raise GraphError(f"{self._name}: goal has no result (rejected)")
        if not _wait(self._result, timeout_s):
            raise ServiceTimeout(f"{self._name}: no result within {timeout_s} s")
        response = self._result.result()
        if response is None:
            raise GraphError(f"{self._name}: goal has no result (client closed)")
        return GoalStatus(int(response.status)), response.result

    def cancel(self, timeout_s: float = 5.0) -> bool:
        """Ask the server to cancel; True when it accepted the cancel request for this goal."""
        future = self._handle.cancel_goal_async()
        if not _wait(future, timeout_s):
            raise ServiceTimeout(f"{self._name}: cancel got no answer within {timeout_s} s")
        response = future.result()
        return int(response.return_code) == CancelGoal.Response.ERROR_NONE and any(
            bytes(info.goal_id.uuid) == self.goal_id for info in response.goals_canceling
        )


class RclpyActionClient:
    def __init__(self, client: Any, name: str, guard: Callable[[str, Callable[..., Any]], Callable[..., None]]) -> None:
        self._client = client
        self._name = name
        self._guard = guard

    def wait_for_server(self, timeout_s: float) -> bool:
        return bool(self._client.wait_for_server(timeout_sec=timeout_s))

    def send_goal(
        self,
        goal: Any,
        feedback_callback: Callable[[Any], None] | None = None,
        timeout_s: float = 10.0,
    ) -> RclpyClientGoal:
        deliver = None if feedback_callback is None else self._guard(f"{self._name} feedback", feedback_callback)

        def on_feedback(message: Any) -> None:  # rclpy passes the FeedbackMessage (goal_id + feedback)
            if deliver is not None:
                deliver(message.feedback)

        future = self._client.send_goal_async(goal, feedback_callback=on_feedback)
        if not _wait(future, timeout_s):
            raise ServiceTimeout(f"action {self._name} did not answer the goal within {timeout_s} s")
        return RclpyClientGoal(future.result(), self._name)

    def destroy(self) -> None:
        self._client.destroy()


class RclpyNode:
    """A ROS 2 node through rclpy, with the same interface and semantics as ``ZenohNode``.

    ``args`` are the process's arguments without the program name (``--ros-args ...``), as for ``ZenohNode``;
    ``sys.argv`` when ``None``. The first node of the process initializes rclpy with them; later nodes get
    them as their own ``cli_args``.
    """

    def __init__(
        self,
        name: str,
        *,
        namespace: str = "",
        args: list[str] | None = None,
        parameter_overrides: dict[str, Any] | None = None,
    ) -> None:
        first = _PROCESS.acquire(args)
        try:
            self._node = RosNode(
                name,
                namespace=namespace or None,
                cli_args=None if first else args,
                parameter_overrides=[Parameter(k, value=v) for k, v in (parameter_overrides or {}).items()],
            )
        except BaseException:
            _PROCESS.release()
            raise
        self._logger = RclpyLogger(self._node.get_logger())
        self._serial = MutuallyExclusiveCallbackGroup()  # subscriptions, services, timers: one at a time
        self._concurrent = ReentrantCallbackGroup()  # goal execution, replies to our clients
        self._declared: dict[str, Any] = {}
        self._actions: list[Any] = []
        self._stopping = threading.Event()
        self._closed = False
        self._close_lock = threading.Lock()
        self._executor = MultiThreadedExecutor(num_threads=EXECUTOR_THREADS)
        self._executor.add_node(self._node)
        self._node.context.on_shutdown(self.request_shutdown)
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
        """``value`` converted for a field of ``idl_type`` by rosidl's rules (``rclpy_fields``): nested dicts
        become messages, numeric arrays/bytes go straight into ``array.array`` fields, ints into ``byte``
        fields become one byte (``set_message_fields`` would make ``bytes(N)`` of them)."""
        shape = element_type(idl_type)
        elem = shape[1] if shape is not None else idl_type
        if is_nested(elem):

            def build(item: Any) -> Any:
                return self.message(elem, **item) if isinstance(item, Mapping) else item

            return [build(v) for v in value] if shape is not None else build(value)
        if isinstance(default, array.array) and isinstance(value, np.ndarray | bytes | bytearray | memoryview):
            return _typed_array(default.typecode, value)
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
        """Subscribe; with ``raw=True`` the callback gets ``(cdr_bytes, None)`` instead of a message."""
        deliver = self._guard(topic, callback)

        def on_message(msg: Any) -> None:  # one parameter: rclpy then passes no MessageInfo
            deliver((bytes(msg), None) if raw else msg)

        subscription = self._node.create_subscription(
            interface_type(type_name),
            topic,
            on_message,
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

    def create_client(self, type_name: str, name: str, qos: QoS = qos_profiles.SERVICES) -> RclpyClient:
        client = self._node.create_client(
            interface_type(type_name), name, qos_profile=to_qos_profile(qos), callback_group=self._concurrent
        )
        return RclpyClient(client, self.resolve(name))

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
        client = ActionClient(self._node, interface_type(type_name), name, callback_group=self._concurrent)
        wrapper = RclpyActionClient(client, self.resolve(name), self._guard)
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
        """Declare with ``default``; an override must keep its type (an int may widen to a float): the rules
        of ``ZenohNode``, where rclpy's static typing would reject ``-p rate:=30`` for a 30.0 default."""
        descriptor = ParameterDescriptor(dynamic_typing=True, read_only=read_only, description=description)
        value = self._node.declare_parameter(name, default, descriptor).value
        if isinstance(value, array.array | tuple):  # rclpy may hand arrays back as array.array
            value = list(value)
        self._declared[name] = ParameterStore({name: value}).declare(name, default)
        return self._declared[name]

    def get_parameter(self, name: str) -> Any:
        """The current value (rclpy's, so a ``ros2 param set`` is seen)."""
        value = self._node.get_parameter(name).value
        return list(value) if isinstance(value, array.array | tuple) else value

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
        return interface_type("builtin_interfaces/msg/Time")(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)

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
        """``executor.spin()``, but a callback error surfacing here is logged instead of ending the loop."""
        while not self._stopping.is_set() and self._node.context.ok():
            try:
                self._executor.spin_once()
            except ExternalShutdownException:
                break
            except Exception:
                if not self._stopping.is_set():
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
        """Stop the executor (running goals see a cancel request), destroy the node, shut rclpy down if last.

        Not from a callback (the executor would wait for it): call ``request_shutdown()`` there."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self._stopping.set()
        self._executor.shutdown(timeout_sec=SHUTDOWN_TIMEOUT_S)
        self._thread.join(SHUTDOWN_TIMEOUT_S)
        for action in reversed(self._actions):
            action.destroy()
        self._node.destroy_node()
        _PROCESS.release()

    def __enter__(self) -> RclpyNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
