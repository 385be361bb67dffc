"""Transport-agnostic playback: hand each recorded message to ``publish`` with the recorded timing.

The schedule is absolute: message *i* is due at ``t0 + (stamp_i - first_stamp) / rate`` on a monotonic
clock, so sleeping late or a slow ``publish`` never accumulates drift — later messages catch up. The lag
(now − due time) is measured for every message and the largest is logged.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Collection

from nodegraph.bag.errors import BagArgumentError
from nodegraph.bag.reader import info, read_messages

log = logging.getLogger(__name__)

Publish = Callable[[str, str, bytes], None]


def play(
    path: str | os.PathLike[str],
    publish: Publish,
    *,
    rate: float = 1.0,
    loop: bool = False,
    topics: Collection[str] | None = None,
    start_offset_s: float = 0.0,
    stop_event: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] | None = None,
) -> int:
    """Publish the bag's messages as ``publish(topic, type_name, cdr)`` at ``rate`` × recorded speed.

    Args:
        path: bag directory or .mcap file.
        publish: called from this thread for each message, in time order.
        rate: playback speed factor (> 0); 2.0 plays twice as fast.
        loop: start over after the last message until ``stop_event`` is set.
        topics: only these topics (all when None).
        start_offset_s: skip the first seconds of the bag (s, >= 0).
        stop_event: set it to stop; the wait between messages is interruptible.
        clock: monotonic clock in seconds (inject a fake one in tests).
        sleep: sleep(seconds); defaults to ``stop_event.wait`` or ``time.sleep``.

    Returns:
        The number of messages published.
    """
    if not rate > 0:
        raise BagArgumentError(f"rate must be > 0, got {rate}")
    if start_offset_s < 0:
        raise BagArgumentError(f"start_offset_s must be >= 0, got {start_offset_s}")
    bag = info(path)
    first = bag.start_ns + round(start_offset_s * 1e9)
    if sleep is None:
        sleep = stop_event.wait if stop_event is not None else time.sleep
    published = 0
    max_lag = 0.0

    def stopped() -> bool:
        return stop_event is not None and stop_event.is_set()

    while not stopped():
        t0 = clock()
        in_pass = 0
        for message in read_messages(path, topics, start_ns=first):
            due = t0 + (message.timestamp_ns - first) / 1e9 / rate
            while (delay := due - clock()) > 0 and not stopped():
                sleep(delay)
            if stopped():
                break
            max_lag = max(max_lag, clock() - due)
            publish(message.topic, message.type_name, message.cdr)
            published += 1
            in_pass += 1
        if not loop or in_pass == 0:
            break
    log.debug("played %d message(s) from %s, largest lag %.1f ms", published, path, max_lag * 1e3)
    return published
