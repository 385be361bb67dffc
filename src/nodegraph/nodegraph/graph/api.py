"""The node interface: what node logic may use of the graph, whatever the transport.

Messages are the backend's objects, built with ``Node.message(type_name, **fields)`` (missing fields take
their ROS defaults) and read by attribute, as in rclpy. Type names are ``pkg/msg/Name``, ``pkg/srv/Name``,
``pkg/action/Name``. Topic names are resolved against the node namespace (``~/x`` is private).

Callbacks of subscriptions, services and timers run one at a time on the node's executor thread (like rclpy's
single-threaded executor); an action goal's execute callback runs on its own thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from nodegraph.graph.qos import DEFAULT, QoS

Message = Any


class GraphError(RuntimeError):
    """Base of the graph runtime's errors."""


class ServiceTimeout(GraphError):  # noqa: N818 (rclpy-like name)
    """A service or action call got no answer in time."""


class Logger(Protocol):
    def debug(self, msg: str) -> None: ...
    def info(self, msg: str) -> None: ...
    def warning(self, msg: str) -> None: ...
    def error(self, msg: str) -> None: ...


class Publisher(Protocol):
    topic: str

    def publish(self, msg: Message) -> None: ...
    def publish_raw(self, cdr: bytes) -> None: ...


class Subscription(Protocol):
    topic: str


class Timer(Protocol):
    def cancel(self) -> None: ...


class Client(Protocol):
    """Service client. ``call`` blocks the calling thread until the answer (other callbacks of the same node
    wait meanwhile on the zenoh backend); it cannot deadlock, since answers arrive on transport threads."""

    def wait_for_service(self, timeout_s: float) -> bool: ...
    def call(self, request: Message, timeout_s: float = 10.0) -> Message: ...


class ServerGoalHandle(Protocol):
    """The server's view of one accepted goal (execute callback argument), like rclpy's ServerGoalHandle."""

    goal_id: bytes
    request: Message

    @property
    def is_cancel_requested(self) -> bool: ...
    def publish_feedback(self, feedback: Message) -> None: ...
    def succeed(self) -> None: ...
    def abort(self) -> None: ...
    def canceled(self) -> None: ...


ExecuteCallback = Callable[[ServerGoalHandle], Message]


class ClientGoal(Protocol):
    """The client's view of one sent goal (like nav2_simple_commander's task handle)."""

    goal_id: bytes
    accepted: bool

    @property
    def status(self) -> int: ...
    def done(self) -> bool: ...
    def result(self, timeout_s: float | None = None) -> tuple[int, Message]: ...
    def cancel(self, timeout_s: float = 5.0) -> bool: ...


class ActionClient(Protocol):
    def wait_for_server(self, timeout_s: float) -> bool: ...
    def send_goal(
        self,
        goal: Message,
        feedback_callback: Callable[[Message], None] | None = None,
        timeout_s: float = 10.0,
    ) -> ClientGoal: ...


class Node(Protocol):
    """A node of the graph (rclpy-like, snake_case)."""

    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def logger(self) -> Logger: ...

    def message(self, type_name: str, **fields: Any) -> Message: ...
    def resolve(self, name: str) -> str: ...

    def create_publisher(self, type_name: str, topic: str, qos: QoS = DEFAULT) -> Publisher: ...
    def create_subscription(
        self,
        type_name: str,
        topic: str,
        callback: Callable[[Message], None],
        qos: QoS = DEFAULT,
        *,
        raw: bool = False,
    ) -> Subscription: ...
    def create_service(self, type_name: str, name: str, callback: Callable[[Message, Message], Message]) -> object: ...
    def create_client(self, type_name: str, name: str) -> Client: ...
    def create_action_server(
        self,
        type_name: str,
        name: str,
        execute_callback: ExecuteCallback,
        goal_callback: Callable[[Message], bool] | None = None,
        cancel_callback: Callable[[ServerGoalHandle], bool] | None = None,
    ) -> object: ...
    def create_action_client(self, type_name: str, name: str) -> ActionClient: ...
    def create_timer(self, period_s: float, callback: Callable[[], None]) -> Timer: ...

    def declare_parameter(self, name: str, default: Any) -> Any: ...
    def get_parameter(self, name: str) -> Any: ...

    def topic_names_and_types(self) -> dict[str, set[str]]: ...

    def now_ns(self) -> int: ...
    def stamp(self, ns: int | None = None) -> Message: ...

    def spin(self) -> None: ...
    def shutdown(self) -> None: ...
