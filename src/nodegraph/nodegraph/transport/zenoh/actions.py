"""Actions over zenoh, laid out as rcl_action does: ``<name>/_action/{send_goal,cancel_goal,get_result}``
services and ``<name>/_action/{feedback,status}`` topics.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import zenoh

from nodegraph.graph import qos as qos_profiles
from nodegraph.graph.api import ExecuteCallback, GoalStatus, GraphError, ServerGoalHandle, ServiceTimeout
from nodegraph.interfaces import interface_info
from nodegraph.interfaces.messages import MessageError, deserialize, make, time_message
from nodegraph.time import to_ns
from nodegraph.transport.zenoh.attachment import Attachment, AttachmentError
from nodegraph.transport.zenoh.entities import (
    ZenohClient,
    ZenohPublisher,
    ZenohService,
    ZenohSubscription,
)

if TYPE_CHECKING:
    from nodegraph.transport.zenoh.node import ZenohNode

# action_msgs/msg/GoalStatus
UNKNOWN, ACCEPTED, EXECUTING, CANCELING, SUCCEEDED, CANCELED, ABORTED = GoalStatus
TERMINAL = (SUCCEEDED, CANCELED, ABORTED)
STATUS_NAMES = {int(s): s.name for s in GoalStatus}
# action_msgs/srv/CancelGoal return codes
ERROR_NONE, ERROR_REJECTED, ERROR_UNKNOWN_GOAL_ID, ERROR_GOAL_TERMINATED = range(4)
CANCEL_GOAL = "action_msgs/srv/CancelGoal"
GET_RESULT_POLL_S = 30.0
GOAL_STOP_TIMEOUT_S = 5.0  # at node shutdown, for the running goals of an action server to end


def _uuid_bytes(msg: Any) -> bytes:
    return bytes(bytearray(msg.uuid))


@dataclass
class _ServerGoal:
    """One goal on the server side (the ``ServerGoalHandle`` given to the execute callback)."""

    server: ZenohActionServer
    goal_id: bytes
    request: Any
    stamp_ns: int
    status: int = ACCEPTED
    result: Any = None
    cancel_requested: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)

    @property
    def is_cancel_requested(self) -> bool:
        """True once a client asked to cancel, or the node is shutting down."""
        return self.cancel_requested.is_set() or self.server.stopping.is_set()

    def publish_feedback(self, feedback: Any) -> None:
        self.server.publish_feedback(self.goal_id, feedback)

    def _finish(self, status: int) -> None:
        if self.status in TERMINAL:
            raise GraphError(f"goal already finished with {STATUS_NAMES[self.status]}")
        self.status = status

    def succeed(self) -> None:
        self._finish(SUCCEEDED)

    def abort(self) -> None:
        self._finish(ABORTED)

    def canceled(self) -> None:
        self._finish(CANCELED)


class _ResultService(ZenohService):
    """``get_result``: replies are deferred until the goal reaches a terminal state."""

    def __init__(self, node: ZenohNode, server: ZenohActionServer, type_name: str, name: str) -> None:
        self._server = server
        super().__init__(node, type_name, name, lambda req, resp: resp, qos_profiles.SERVICES)

    def dispatch(self) -> None:
        with self._lock:
            if not self._pending:
                return
            query = self._pending.popleft()
        try:
            raw = query.attachment
            attachment = Attachment.decode(raw.to_bytes() if raw is not None else None)
            request = deserialize(query.payload.to_bytes() if query.payload else b"", self.info.part("Request"))
        except (AttachmentError, MessageError) as exc:
            self.node.logger.error(f"{self.name}: bad request: {exc}")
            query.drop()
            return
        self._server.defer_result(_uuid_bytes(request.goal_id), query, attachment)


class ZenohActionServer:
    """Accepts goals, runs each accepted goal's execute callback on its own thread, publishes status."""

    def __init__(
        self,
        node: ZenohNode,
        type_name: str,
        name: str,
        execute_callback: ExecuteCallback,
        goal_callback: Callable[[Any], bool] | None = None,
        cancel_callback: Callable[[ServerGoalHandle], bool] | None = None,
    ) -> None:
        self.info = interface_info(type_name)
        if self.info.kind != "action":
            raise MessageError(f"{type_name} is not an action type")
        self.node = node
        self.name = name
        self._execute = execute_callback
        self._accept = goal_callback or (lambda goal: True)
        self._cancel = cancel_callback or (lambda handle: True)
        self._goals: dict[bytes, _ServerGoal] = {}
        self._waiting: dict[bytes, list[tuple[zenoh.Query, Attachment]]] = {}
        self._lock = threading.RLock()
        self.stopping = threading.Event()
        """Set when the node shuts down: running goals see a cancel request."""
        prefix = f"{name}/_action"
        self._status = ZenohPublisher(
            node, "action_msgs/msg/GoalStatusArray", f"{prefix}/status", qos_profiles.ACTION_STATUS
        )
        self._feedback = ZenohPublisher(node, self.info.part("FeedbackMessage"), f"{prefix}/feedback",
                                        qos_profiles.DEFAULT)  # fmt: skip
        self._result = _ResultService(node, self, self.info.part("GetResult"), f"{prefix}/get_result")
        self._cancel_service = ZenohService(node, CANCEL_GOAL, f"{prefix}/cancel_goal", self._on_cancel,
                                            qos_profiles.SERVICES)  # fmt: skip
        self._send_goal = ZenohService(node, self.info.part("SendGoal"), f"{prefix}/send_goal", self._on_goal,
                                       qos_profiles.SERVICES)  # fmt: skip

    # services
    def _on_goal(self, request: Any, response: Any) -> Any:
        goal_id = _uuid_bytes(request.goal_id)
        try:
            accepted = bool(self._accept(request.goal))
        except Exception as exc:
            self.node.logger.error(f"{self.name}: goal callback raised {exc!r}; goal rejected")
            accepted = False
        response.accepted = accepted
        response.stamp = self.node.stamp()
        if not accepted:
            return response
        goal = _ServerGoal(self, goal_id, request.goal, to_ns(response.stamp))
        with self._lock:
            self._goals[goal_id] = goal
        self.publish_status()
        threading.Thread(target=self._run, args=(goal,), name=f"goal:{goal_id.hex()[:8]}", daemon=True).start()
        return response

    def _on_cancel(self, request: Any, response: Any) -> Any:
        wanted = _uuid_bytes(request.goal_info.goal_id)
        before_ns = to_ns(request.goal_info.stamp)
        everything = not any(wanted) and before_ns == 0
        with self._lock:
            candidates = [
                g for g in self._goals.values()
                if everything or g.goal_id == wanted or (before_ns and g.stamp_ns <= before_ns)
            ]  # fmt: skip
        active = [g for g in candidates if g.status not in TERMINAL]
        canceling = []
        for goal in active:
            try:
                ok = bool(self._cancel(goal))
            except Exception as exc:
                self.node.logger.error(f"{self.name}: cancel callback raised {exc!r}")
                ok = False
            if ok:
                goal.cancel_requested.set()
                goal.status = CANCELING
                canceling.append(goal)
        if canceling:
            response.return_code = ERROR_NONE
        elif candidates and not active:
            response.return_code = ERROR_GOAL_TERMINATED
        elif not candidates and any(wanted):
            response.return_code = ERROR_UNKNOWN_GOAL_ID
        else:
            response.return_code = ERROR_REJECTED if active else ERROR_NONE
        response.goals_canceling = [self._goal_info(g) for g in canceling]
        self.publish_status()
        return response

    def defer_result(self, goal_id: bytes, query: zenoh.Query, attachment: Attachment) -> None:
        with self._lock:
            goal = self._goals.get(goal_id)
            if goal is None or goal.status in TERMINAL:
                self._reply_result(goal, query, attachment)
            else:
                self._waiting.setdefault(goal_id, []).append((query, attachment))

    def _reply_result(self, goal: _ServerGoal | None, query: zenoh.Query, attachment: Attachment) -> None:
        response = make(self.info.part("GetResult_Response"))
        if goal is not None:
            response.status = goal.status
            response.result = goal.result if goal.result is not None else make(self.info.part("Result"))
        try:
            self._result.reply(query, attachment, response)
        except Exception as exc:  # the client gave up on this query
            self.node.logger.debug(f"{self.name}: result reply failed: {exc!r}")

    # execution
    def _run(self, goal: _ServerGoal) -> None:
        goal.status = EXECUTING if not goal.cancel_requested.is_set() else CANCELING
        self.publish_status()
        try:
            result = self._execute(goal)
            if goal.status not in TERMINAL:
                self.node.logger.warning(f"{self.name}: goal finished without a state; marking it aborted")
                goal.status = ABORTED
        except Exception as exc:
            self.node.logger.error(f"{self.name}: execute callback raised {exc!r}; goal aborted")
            result, goal.status = None, ABORTED
        goal.result = result if result is not None else make(self.info.part("Result"))
        with self._lock:
            waiting = self._waiting.pop(goal.goal_id, [])
        for query, attachment in waiting:
            self._reply_result(goal, query, attachment)
        self.publish_status()
        goal.finished.set()

    def publish_feedback(self, goal_id: bytes, feedback: Any) -> None:
        uid = make("unique_identifier_msgs/msg/UUID", uuid=list(goal_id))
        self._feedback.publish(make(self.info.part("FeedbackMessage"), goal_id=uid, feedback=feedback))

    def _goal_info(self, goal: _ServerGoal) -> Any:
        stamp = time_message(goal.stamp_ns)
        uid = make("unique_identifier_msgs/msg/UUID", uuid=list(goal.goal_id))
        return make("action_msgs/msg/GoalInfo", goal_id=uid, stamp=stamp)

    def publish_status(self) -> None:
        with self._lock:
            goals = list(self._goals.values())
        statuses = [make("action_msgs/msg/GoalStatus", goal_info=self._goal_info(g), status=g.status) for g in goals]
        self._status.publish(make("action_msgs/msg/GoalStatusArray", status_list=statuses))

    def close(self) -> None:
        """Running goals see a cancel request and get up to ``GOAL_STOP_TIMEOUT_S`` together to end (their clients
        then get the result, also those whose result request still waits for the executor), as on rclpy; then
        the server's entities close."""
        self.stopping.set()
        with self._lock:
            running = [g for g in self._goals.values() if not g.finished.is_set()]
        deadline = time.monotonic() + GOAL_STOP_TIMEOUT_S
        for goal in running:
            if not goal.finished.wait(max(deadline - time.monotonic(), 0.0)):
                self.node.logger.warning(f"{self.name}: a goal still executing at shutdown; closing anyway")
                break
        while self._result.pending:  # result requests still queued behind a busy executor: answer them now
            self._result.dispatch()
        for entity in (self._send_goal, self._cancel_service, self._result, self._feedback, self._status):
            entity.close()


class ZenohClientGoal:
    """A sent goal: acceptance, status, feedback, result and cancel (see ``ClientGoal``)."""

    def __init__(self, client: ZenohActionClient, goal_id: bytes, accepted: bool) -> None:
        self.goal_id = goal_id
        self.accepted = accepted
        self._client = client
        self._status = ACCEPTED if accepted else UNKNOWN
        self._result: tuple[GoalStatus, Any] | None = None
        self._done = threading.Event()
        if accepted:
            threading.Thread(target=self._fetch_result, name="get-result", daemon=True).start()
        else:
            self._done.set()

    @property
    def status(self) -> GoalStatus:
        """The latest status: the result's once it arrived."""
        return self._result[0] if self._result else GoalStatus(self._status)

    def update_status(self, status: int) -> None:
        if self._result is None:
            self._status = GoalStatus(status)

    def _fetch_result(self) -> None:
        request = make(self._client.info.part("GetResult_Request"), goal_id=self._client.uuid_msg(self.goal_id))
        while not self._client.closed:
            try:
                response = self._client.get_result.call(request, timeout_s=GET_RESULT_POLL_S)
            except ServiceTimeout:
                continue
            except Exception as exc:
                if not self._client.closed:
                    self._client.node.logger.error(f"{self._client.name}: get_result failed: {exc!r}")
                break
            self._result = (GoalStatus(int(response.status)), response.result)
            break
        self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, timeout_s: float | None = None) -> tuple[GoalStatus, Any]:
        """``(status, result message)``; raises ServiceTimeout if not finished within ``timeout_s``."""
        if not self._done.wait(timeout_s):
            raise ServiceTimeout(f"{self._client.name}: no result within {timeout_s} s")
        if self._result is None:
            raise GraphError(f"{self._client.name}: goal has no result (rejected or client closed)")
        return self._result

    def cancel(self, timeout_s: float = 5.0) -> bool:
        """Ask the server to cancel; True when it accepted the cancel request for this goal."""
        info = make("action_msgs/msg/GoalInfo", goal_id=self._client.uuid_msg(self.goal_id))
        response = self._client.cancel_goal.call(make(f"{CANCEL_GOAL}_Request", goal_info=info), timeout_s)
        return int(response.return_code) == ERROR_NONE and any(
            _uuid_bytes(g.goal_id) == self.goal_id for g in response.goals_canceling
        )


class ZenohActionClient:
    def __init__(self, node: ZenohNode, type_name: str, name: str) -> None:
        self.info = interface_info(type_name)
        if self.info.kind != "action":
            raise MessageError(f"{type_name} is not an action type")
        self.node = node
        self.name = name
        self.closed = False
        prefix = f"{name}/_action"
        self.send_goal_client = ZenohClient(node, self.info.part("SendGoal"), f"{prefix}/send_goal",
                                            qos_profiles.SERVICES)  # fmt: skip
        self.cancel_goal = ZenohClient(node, CANCEL_GOAL, f"{prefix}/cancel_goal", qos_profiles.SERVICES)
        self.get_result = ZenohClient(node, self.info.part("GetResult"), f"{prefix}/get_result",
                                      qos_profiles.SERVICES)  # fmt: skip
        self._goals: dict[bytes, ZenohClientGoal] = {}
        self._feedback_callbacks: dict[bytes, Callable[[Any], None]] = {}
        self._feedback = ZenohSubscription(node, self.info.part("FeedbackMessage"), f"{prefix}/feedback",
                                           self._on_feedback, qos_profiles.DEFAULT)  # fmt: skip
        self._status = ZenohSubscription(node, "action_msgs/msg/GoalStatusArray", f"{prefix}/status",
                                         self._on_status, qos_profiles.ACTION_STATUS)  # fmt: skip

    @staticmethod
    def uuid_msg(goal_id: bytes) -> Any:
        return make("unique_identifier_msgs/msg/UUID", uuid=list(goal_id))

    def _on_feedback(self, msg: Any) -> None:
        callback = self._feedback_callbacks.get(_uuid_bytes(msg.goal_id))
        if callback is not None:
            callback(msg.feedback)

    def _on_status(self, msg: Any) -> None:
        for status in msg.status_list:
            goal = self._goals.get(_uuid_bytes(status.goal_info.goal_id))
            if goal is not None:
                goal.update_status(int(status.status))

    def wait_for_server(self, timeout_s: float) -> bool:
        return self.send_goal_client.wait_for_service(timeout_s)

    def send_goal(
        self,
        goal: Any,
        feedback_callback: Callable[[Any], None] | None = None,
        timeout_s: float = 10.0,
    ) -> ZenohClientGoal:
        goal_id = uuid.uuid4().bytes
        if feedback_callback is not None:
            self._feedback_callbacks[goal_id] = feedback_callback
        request = make(self.info.part("SendGoal_Request"), goal_id=self.uuid_msg(goal_id), goal=goal)
        response = self.send_goal_client.call(request, timeout_s)
        handle = ZenohClientGoal(self, goal_id, bool(response.accepted))
        self._goals[goal_id] = handle
        return handle

    def close(self) -> None:
        self.closed = True
        for entity in (
            self.send_goal_client,
            self.cancel_goal,
            self.get_result,
            self._feedback,
            self._status,
        ):
            entity.close()
