"""The node interface: what node logic may use of the graph, whatever the transport.

Messages are the backend's objects, built with ``Node.message(type_name, **fields)`` (missing fields take
their ROS defaults) and read by attribute, as in rclpy. Type names are ``pkg/msg/Name``, ``pkg/srv/Name``,
``pkg/action/Name``. Topic names are resolved against the node namespace (``~/x`` is private).

Callbacks of subscriptions, services and timers run one at a time on the node's executor thread (like rclpy's
single-threaded executor); an action goal's execute callback runs on its own thread.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from nodegraph.graph.parameters import OnSetParametersCallback, SetParametersResult
from nodegraph.graph.qos import DEFAULT, QoS

Message = Any
"""A message of the backend (a rosbags dataclass on zenoh, a rosidl_python object on rclpy)."""


class GoalStatus(enum.IntEnum):
    """action_msgs/msg/GoalStatus status codes."""

    UNKNOWN = 0
    ACCEPTED = 1
    EXECUTING = 2
    CANCELING = 3
    SUCCEEDED = 4
    CANCELED = 5
    ABORTED = 6

    @property
    def is_terminal(self) -> bool:
        """True for SUCCEEDED, CANCELED and ABORTED."""
        return self in (GoalStatus.SUCCEEDED, GoalStatus.CANCELED, GoalStatus.ABORTED)


@dataclass(frozen=True)
class EndpointInfo:
    """One publisher or subscription of a topic, as rclpy's ``TopicEndpointInfo`` describes it."""

    node_name: str
    node_namespace: str
    topic_type: str
    topic_type_hash: str
    endpoint_type: Literal["PUBLISHER", "SUBSCRIPTION"]
    gid: bytes
    qos: QoS


class GraphError(RuntimeError):
    """Base of the graph runtime's errors."""


class ServiceTimeout(GraphError):  # noqa: N818 (rclpy-like name)
    """A service or action call got no answer in time."""


class Logger(Protocol):
    """A node's logger, as rclpy's: ``throttle_duration_sec`` logs a call site at most once per that many
    seconds, ``once`` only the first time, ``skip_first`` every time but the first. Every line also goes to
    ``/rosout``."""

    def debug(self, msg: str, *, throttle_duration_sec: float | None = None, once: bool = False,
              skip_first: bool = False) -> None:  # fmt: skip
        """Log at DEBUG."""

    def info(self, msg: str, *, throttle_duration_sec: float | None = None, once: bool = False,
             skip_first: bool = False) -> None:  # fmt: skip
        """Log at INFO."""

    def warning(self, msg: str, *, throttle_duration_sec: float | None = None, once: bool = False,
                skip_first: bool = False) -> None:  # fmt: skip
        """Log at WARN."""

    def error(self, msg: str, *, throttle_duration_sec: float | None = None, once: bool = False,
              skip_first: bool = False) -> None:  # fmt: skip
        """Log at ERROR."""


class Publisher(Protocol):
    """A topic publisher."""

    topic: str
    """The fully qualified topic name."""

    def publish(self, msg: Message) -> None:
        """Serialize and send ``msg`` (a message of the publisher's type)."""

    def publish_raw(self, cdr: bytes) -> None:
        """Send an already serialized message (CDR with its 4-byte encapsulation header)."""


class Subscription(Protocol):
    """A topic subscription (kept alive by the node; nothing to call)."""

    topic: str
    """The fully qualified topic name."""


class Timer(Protocol):
    """A periodic callback on the node's executor."""

    def cancel(self) -> None:
        """Stop calling back; safe after the node has shut down."""


class Client(Protocol):
    """Service client. ``call`` blocks the calling thread until the answer (other callbacks of the same node
    wait meanwhile on the zenoh backend); it cannot deadlock, since answers arrive on transport threads."""

    def wait_for_service(self, timeout_s: float) -> bool:
        """True once a server of this service is on the graph; False after ``timeout_s`` seconds."""

    def call(self, request: Message, timeout_s: float = 10.0) -> Message:
        """Send ``request`` and return the response; raises ServiceTimeout after ``timeout_s`` seconds."""


class ServerGoalHandle(Protocol):
    """The server's view of one accepted goal (execute callback argument), like rclpy's ServerGoalHandle."""

    goal_id: bytes
    """The goal's 16-byte UUID."""
    request: Message
    """The goal message."""

    @property
    def is_cancel_requested(self) -> bool:
        """True once a client asked to cancel (or the node is shutting down)."""

    def publish_feedback(self, feedback: Message) -> None:
        """Send a feedback message to the goal's client."""

    def succeed(self) -> None:
        """End the goal as SUCCEEDED (the execute callback then returns the result)."""

    def abort(self) -> None:
        """End the goal as ABORTED."""

    def canceled(self) -> None:
        """End the goal as CANCELED (after a cancel request)."""


ExecuteCallback = Callable[[ServerGoalHandle], Message]
"""An action server's execute callback: runs one goal to a terminal state and returns its result."""


class ClientGoal(Protocol):
    """The client's view of one sent goal (like nav2_simple_commander's task handle)."""

    goal_id: bytes
    """The goal's 16-byte UUID."""
    accepted: bool
    """Whether the server accepted the goal."""

    @property
    def status(self) -> GoalStatus:
        """The latest status the server reported."""

    def done(self) -> bool:
        """True once the goal reached a terminal status (or was rejected)."""

    def result(self, timeout_s: float | None = None) -> tuple[GoalStatus, Message]:
        """``(terminal status, result message)``; raises ServiceTimeout when not finished within ``timeout_s``."""

    def cancel(self, timeout_s: float = 5.0) -> bool:
        """Ask the server to cancel; True when it accepted the request."""


class ActionClient(Protocol):
    """A client of one action server."""

    def wait_for_server(self, timeout_s: float) -> bool:
        """True once the action server is on the graph; False after ``timeout_s`` seconds."""

    def send_goal(
        self,
        goal: Message,
        feedback_callback: Callable[[Message], None] | None = None,
        timeout_s: float = 10.0,
    ) -> ClientGoal:
        """Send ``goal``; ``feedback_callback`` gets each feedback message. Raises ServiceTimeout when the
        server does not answer within ``timeout_s``."""


class Node(Protocol):
    """A node of the graph (rclpy-like, snake_case). Like an rclpy node it also offers ``/rosout``,
    ``/parameter_events``, the six parameter services and ``~/get_type_description``."""

    @property
    def name(self) -> str:
        """The node name (after ``__node:=`` remapping)."""

    @property
    def namespace(self) -> str:
        """The namespace, ``/`` at the root."""

    @property
    def fully_qualified_name(self) -> str:
        """``/namespace/name``."""

    @property
    def logger(self) -> Logger:
        """The node's logger (stderr in ROS format, and ``/rosout``)."""

    def message(self, type_name: str, /, **fields: Any) -> Message:
        """A message of ``type_name`` with ``fields`` set and every other field at its ROS default."""

    def resolve(self, name: str) -> str:
        """The fully qualified name of a topic or service name (namespace, ``~/``, remappings)."""

    def create_publisher(self, type_name: str, topic: str, qos: QoS = DEFAULT) -> Publisher:
        """A publisher of ``type_name`` on ``topic``."""

    def create_subscription(
        self,
        type_name: str,
        topic: str,
        callback: Callable[[Message], None],
        qos: QoS = DEFAULT,
        *,
        raw: bool = False,
    ) -> Subscription:
        """Call ``callback(msg)`` for each message; with ``raw`` it gets ``(cdr bytes, info)``: info has at least
        ``source_timestamp_ns`` (when the publisher sent it; the rmw_zenoh attachment on zenoh, rclpy's
        MessageInfo on rclpy) and ``sequence_number``, or is None when the sender attached nothing."""

    def create_service(self, type_name: str, name: str, callback: Callable[[Message, Message], Message]) -> object:
        """Serve ``name``: ``callback(request, response)`` returns the response; if it raises, the error is
        logged and the default response is answered."""

    def create_client(self, type_name: str, name: str) -> Client:
        """A client of service ``name``."""

    def create_action_server(
        self,
        type_name: str,
        name: str,
        execute_callback: ExecuteCallback,
        goal_callback: Callable[[Message], bool] | None = None,
        cancel_callback: Callable[[ServerGoalHandle], bool] | None = None,
    ) -> object:
        """Serve action ``name``; goals and cancels are accepted unless the callbacks return False."""

    def create_action_client(self, type_name: str, name: str) -> ActionClient:
        """A client of action ``name``."""

    def create_timer(self, period_s: float, callback: Callable[[], None]) -> Timer:
        """Call ``callback`` every ``period_s`` seconds (> 0) of ROS time on the executor: of ``/clock`` under
        ``use_sim_time`` (none before the first message; a clock jumping back restarts the schedule), else of the
        wall clock. A timer that fell behind fires once, not a burst. On ``/clock`` the zenoh backend fires on the
        reading nearest each due time; rclpy (rcl) on the first at or after it, which aliases when the clock steps
        as coarsely as the period (a 30 Hz timer on the twin's 30 Hz clock fires on 2 of every 3 steps)."""

    def declare_parameter(self, name: str, default: Any, *, read_only: bool = False, description: str = "") -> Any:
        """Declare ``name``; returns the override (file, ``-p``) or ``default``. An override keeps the
        default's type (an int may widen to a float). ``read_only`` refuses later changes."""

    def get_parameter(self, name: str) -> Any:
        """The current value of a declared parameter."""

    def set_parameters(self, values: Mapping[str, Any]) -> list[SetParametersResult]:
        """Set parameters one by one, as ``~/set_parameters`` does: one result each."""

    def add_on_set_parameters_callback(self, callback: OnSetParametersCallback) -> None:
        """``callback(new values)`` accepts or refuses each change before it is applied (live parameters)."""

    def topic_names_and_types(self) -> dict[str, set[str]]:
        """Topics seen on the graph with their types."""

    def publishers_info_by_topic(self, topic: str) -> list[EndpointInfo]:
        """The publishers of ``topic`` with their offered QoS."""

    def subscriptions_info_by_topic(self, topic: str) -> list[EndpointInfo]:
        """The subscriptions of ``topic`` with their requested QoS."""

    def now_ns(self) -> int:
        """ROS time in ns (``/clock`` when ``use_sim_time``, else the system clock)."""

    def stamp(self, ns: int | None = None) -> Message:
        """builtin_interfaces/msg/Time of ``ns`` (default: ``now_ns()``)."""

    @property
    def is_shutdown(self) -> bool:
        """True once shutdown was requested or done."""

    def request_shutdown(self) -> None:
        """Make ``spin()`` return (safe from a callback, unlike ``shutdown()``)."""

    def spin(self) -> None:
        """Block until SIGINT/SIGTERM or ``request_shutdown()``, then shut down."""

    def shutdown(self) -> None:
        """Stop callbacks and remove every entity of the node from the graph; idempotent."""
