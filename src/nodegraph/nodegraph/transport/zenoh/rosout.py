"""``/rosout``: every log line of a node as rcl_interfaces/msg/Log, as rcl's rosout publisher sends it.

QoS as rcl's ``rcl_qos_profile_rosout_default``: depth 1000, reliable, transient_local, 10 s lifespan (the
lifespan is advertised in the liveliness token as rmw_zenoh does; the zenoh publisher cache does not expire
samples by it).
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from nodegraph.graph.qos import QoS
from nodegraph.interfaces.messages import make, time_message

if TYPE_CHECKING:
    from nodegraph.transport.zenoh.node import ZenohNode

ROSOUT = "/rosout"
ROSOUT_QOS = QoS(depth=1000, durability="transient_local", lifespan_ns=10_000_000_000)
# rcl_interfaces/msg/Log levels
LOG_LEVELS = {logging.DEBUG: 10, logging.INFO: 20, logging.WARNING: 30, logging.ERROR: 40, logging.CRITICAL: 50}


class RosoutHandler(logging.Handler):
    """A logging handler that publishes each record of the node's logger on ``/rosout``."""

    def __init__(self, node: ZenohNode) -> None:
        super().__init__(logging.DEBUG)
        self._name = node.fully_qualified_name.strip("/").replace("/", ".")
        self._publisher = node.create_publisher("rcl_interfaces/msg/Log", ROSOUT, ROSOUT_QOS)
        self._busy = threading.local()  # no recursion when publishing itself logs

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self._busy, "active", False):
            return
        self._busy.active = True
        try:
            text = record.getMessage()
            if record.exc_info:
                text += "\n" + logging.Formatter().formatException(record.exc_info)
            level = max((v for k, v in LOG_LEVELS.items() if k <= record.levelno), default=10)
            msg = make(
                "rcl_interfaces/msg/Log",
                stamp=time_message(int(record.created * 1e9)),
                level=level,
                name=self._name,
                msg=text,
                file=record.pathname,
                function=record.funcName or "",
                line=record.lineno,
            )
            self._publisher.publish(msg)
        except Exception:  # the session may be closing: never let logging raise
            pass
        finally:
            self._busy.active = False
