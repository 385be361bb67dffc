"""Logger, timer, publisher, subscription and service client of an ``RclpyNode``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rclpy.impl import rcutils_logger

from nodegraph.graph.api import ServiceTimeout
from nodegraph.transport.rclpy.context import wait_future

# rclpy keys a log call's filters (once, throttle, skip_first) and its reported location on the calling frame
# outside rclpy; its list of internal files is open to wrappers like this one, so the caller of RclpyLogger
# is the call site (else every log line of a node would be one call site, and a `once` would silence all).
rcutils_logger._internal_callers.append(os.path.realpath(__file__))


class RclpyLogger:
    """``node.get_logger()`` with the interface's ``debug/info/warning/error(str, throttle_duration_sec=...,
    once=..., skip_first=...)`` (rclpy's own keyword arguments, passed through; the call site is the caller's)."""

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


@dataclass(frozen=True)
class ReceivedInfo:
    """What rmw tells about a received message (rclpy's MessageInfo), under the zenoh attachment's field names:
    given to raw subscriptions with the CDR bytes."""

    source_timestamp_ns: int
    """When the publisher sent it (system clock, ns)."""
    received_timestamp_ns: int
    sequence_number: int
    """The publisher's sequence number of the message."""

    @classmethod
    def from_rclpy(cls, info: Mapping[str, int]) -> ReceivedInfo:
        return cls(int(info["source_timestamp"]), int(info["received_timestamp"]),
                   int(info["publication_sequence_number"]))  # fmt: skip


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
        if not wait_future(future, timeout_s):
            self._client.remove_pending_request(future)
            raise ServiceTimeout(f"service {self.name} did not answer within {timeout_s} s")
        return future.result()
