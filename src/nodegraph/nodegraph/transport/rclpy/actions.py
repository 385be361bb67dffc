"""Action goal handles and the action client of an ``RclpyNode``, with the interface's semantics."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from action_msgs.srv import CancelGoal

from nodegraph.graph.api import GoalStatus, GraphError, ServiceTimeout
from nodegraph.transport.rclpy.context import wait_future


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
        if not wait_future(self._result, timeout_s):
            raise ServiceTimeout(f"{self._name}: no result within {timeout_s} s")
        response = self._result.result()
        if response is None:
            raise GraphError(f"{self._name}: goal has no result (client closed)")
        return GoalStatus(int(response.status)), response.result

    def cancel(self, timeout_s: float = 5.0) -> bool:
        """Ask the server to cancel; True when it accepted the cancel request for this goal."""
        future = self._handle.cancel_goal_async()
        if not wait_future(future, timeout_s):
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
        if not wait_future(future, timeout_s):
            raise ServiceTimeout(f"action {self._name} did not answer the goal within {timeout_s} s")
        return RclpyClientGoal(future.result(), self._name)

    def destroy(self) -> None:
        self._client.destroy()
