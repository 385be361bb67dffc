"""Record raw CDR messages into a rosbag2 bag (MCAP storage) from any thread, without blocking on I/O.

Layout, as ``ros2 bag record -s mcap`` (Jazzy) writes it::

    <bag>/metadata.yaml        rosbag2 metadata version 9, storage_identifier mcap, ros_distro jazzy
    <bag>/<bag>_0.mcap         profile ros2; schemas ros2msg (full definition text); channels cdr with
                               metadata offered_qos_profiles + topic_type_hash; a 'rosbag2' metadata record

Why the ``mcap`` writer and not ``rosbags.rosbag2.Writer``: rosbags 0.11 does write MCAP bags, but its
storage names the file ``<bag>.mcap`` (not ``<bag>_0.mcap``), fixes chunks at 1 MiB, only knows zstd, never
flushes a chunk to the OS before ``close()`` and cannot finish a partial chunk on a timer — so a killed
recorder would lose everything. rosbags still supplies the message definitions and RIHS01 hashes (the
project typestore); the ``mcap`` package writes the records.

Threading: ``write()`` only appends to a bounded in-memory queue (counted drops when the bound is hit);
one writer thread does every file operation, through ``mcap_file.McapBagFile`` (the storage; metadata.yaml
itself is ``metadata``). Crash safety: each completed chunk is handed to the OS at once,
and every ``flush_interval_s`` the partial chunk is closed, the file fsync'ed and a provisional
metadata.yaml written — a SIGKILL loses at most the last interval. ``recover()`` restores the index.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

from nodegraph.bag.errors import (
    BagArgumentError,
    BagClosedError,
    BagExistsError,
    BagTopicError,
    BagWriteError,
)
from nodegraph.bag.mcap_file import COMPRESSION, Compression, McapBagFile, TopicEntry
from nodegraph.bag.metadata import ROS_DISTRO, parse_qos_yaml

log = logging.getLogger(__name__)

__all__ = ["BagWriter", "Compression", "WriterStats"]
_ITEM_OVERHEAD = 128  # bytes charged per queued message on top of its payload


@dataclass(frozen=True)
class _Flush:
    done: threading.Event


_CLOSE = object()


@dataclass(frozen=True)
class WriterStats:
    """Counters of a BagWriter: messages written to the file, dropped (queue full), waiting in the queue,
    durable (in chunks handed to the OS), lost (still queued when the writer thread failed)."""

    written: int
    dropped: int
    queued: int
    queued_bytes: int
    durable: int
    lost: int


class BagWriter:
    """A rosbag2 (MCAP) bag being recorded; use as a context manager or call ``open()``/``close()``.

    Args:
        path: bag directory to create (must not exist).
        chunk_size: uncompressed chunk size in bytes before a chunk is closed and flushed.
        compression: MCAP chunk compression: "zstd" (the default of rosbag2's MCAP writer), "lz4" or None.
        max_queue_bytes: bound of the pending-write queue (payload bytes); beyond it writes are dropped.
        max_queue_messages: bound of the pending-write queue in messages.
        flush_interval_s: at most this long (s) between closing the open chunk and syncing to disk.
        fsync: fsync the MCAP file on each interval flush and on close (not only hand it to the OS).
        custom_data: rosbag2 ``custom_data`` key/values for metadata.yaml.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        chunk_size: int = 1024 * 1024,
        compression: Compression | None = "zstd",
        max_queue_bytes: int = 512 * 1024 * 1024,
        max_queue_messages: int = 100_000,
        flush_interval_s: float = 1.0,
        fsync: bool = True,
        custom_data: Mapping[str, str] | None = None,
        ros_distro: str = ROS_DISTRO,
    ) -> None:
        if chunk_size < 1024:
            raise BagArgumentError(f"chunk_size must be >= 1024 bytes, got {chunk_size}")
        if compression not in COMPRESSION:
            raise BagArgumentError(f"compression must be None, 'zstd' or 'lz4', got {compression!r}")
        if max_queue_bytes <= 0 or max_queue_messages <= 0:
            raise BagArgumentError("queue bounds must be positive")
        if not flush_interval_s > 0:
            raise BagArgumentError(f"flush_interval_s must be > 0, got {flush_interval_s}")
        self.path = Path(path)
        self.chunk_size = chunk_size
        self.compression = compression
        self.max_queue_bytes = max_queue_bytes
        self.max_queue_messages = max_queue_messages
        self.flush_interval_s = flush_interval_s
        self.fsync = fsync
        self.custom_data = dict(custom_data or {})
        self.ros_distro = ros_distro

        self._cv = threading.Condition()
        self._queue: deque[object] = deque()
        self._queued = 0
        self._queued_bytes = 0
        self._topics: dict[str, TopicEntry] = {}
        self._state: Literal["new", "open", "closing", "closed", "failed"] = "new"
        self._error: BaseException | None = None
        self._dropped = 0
        self._dropped_by_topic: dict[str, int] = {}
        self._lost = 0
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._closed = threading.Event()
        self._storage = McapBagFile(self.path, chunk_size=chunk_size, compression=compression, fsync=fsync,
                                    custom_data=self.custom_data, ros_distro=ros_distro)  # fmt: skip
        self.mcap_path = self._storage.mcap_path

    # ------------------------------------------------------------------ caller side
    def open(self) -> BagWriter:
        """Start the writer thread, which creates the directory and file; raises if that fails."""
        with self._cv:
            if self._state != "new":
                raise BagClosedError(f"bag writer {self.path} was opened already")
            if self.path.exists():
                raise BagExistsError(f"{self.path} exists already; a bag is never overwritten")
            self._state = "open"
        self._thread = threading.Thread(target=self._run, name=f"bag-writer:{self.path.name}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            if isinstance(self._error, FileExistsError):
                raise BagExistsError(f"{self.path} exists already") from self._error
            raise BagWriteError(f"cannot create bag {self.path}: {self._error}") from self._error
        return self

    def __enter__(self) -> BagWriter:
        return self.open()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self.close()
        except BagWriteError:
            if exc_type is None:
                raise
            log.exception("closing bag %s after an error also failed", self.path)

    def add_topic(self, topic: str, type_name: str, qos_profile_yaml: str = "") -> None:
        """Register ``topic`` with its ROS type (``pkg/msg/Name``) and offered QoS (YAML list string).

        Registering the same topic again with the same type is a no-op; another type raises BagTopicError.
        """
        from nodegraph.bag.definitions import message_definition
        from nodegraph.interfaces import InterfaceError, interface_info
        from nodegraph.interfaces.typestore import normalize

        if not topic.startswith("/"):
            raise BagTopicError(f"topic {topic!r} must be absolute (start with '/')")
        try:
            canonical = normalize(type_name)
            type_hash = interface_info(canonical).type_hash
            msgdef = message_definition(canonical)
        except (InterfaceError, KeyError) as exc:
            raise BagTopicError(f"topic {topic}: unknown message type {type_name!r} ({exc})") from None
        parse_qos_yaml(qos_profile_yaml)
        entry = TopicEntry(topic, canonical, qos_profile_yaml.strip(), type_hash, msgdef)
        with self._cv:
            self._check_usable()
            known = self._topics.get(topic)
            if known is not None:
                if known.type != canonical:
                    raise BagTopicError(f"topic {topic} is recorded as {known.type}, not {canonical}")
                return
            self._topics[topic] = entry
            self._queue.append(entry)
            self._cv.notify()

    def write(
        self,
        topic: str,
        timestamp_ns: int,
        cdr: bytes | bytearray | memoryview,
        publish_time_ns: int | None = None,
    ) -> bool:
        """Queue one serialized message (CDR with its 4-byte header) received at ``timestamp_ns`` (ns since
        epoch, the MCAP log time) and sent at ``publish_time_ns`` (the source timestamp; the receive time when
        None), as rosbag2 records both. Never waits for I/O. Returns False when the queue bound dropped it
        (counted in ``dropped``); raises BagWriteError once the writer thread has failed, BagTopicError for
        an unregistered topic."""
        data = cdr if isinstance(cdr, bytes) else bytes(cdr)
        if timestamp_ns < 0:
            raise BagArgumentError(f"timestamp_ns must be >= 0, got {timestamp_ns}")
        size = len(data) + _ITEM_OVERHEAD
        with self._cv:
            self._check_usable()
            if topic not in self._topics:
                raise BagTopicError(f"topic {topic} was not added to bag {self.path} (call add_topic first)")
            if self._queued >= self.max_queue_messages or self._queued_bytes + size > self.max_queue_bytes:
                self._dropped += 1
                self._dropped_by_topic[topic] = self._dropped_by_topic.get(topic, 0) + 1
                dropped = self._dropped
            else:
                sent = int(timestamp_ns if publish_time_ns is None else publish_time_ns)
                self._queue.append((topic, int(timestamp_ns), sent, data))
                self._queued += 1
                self._queued_bytes += size
                self._cv.notify()
                return True
        if dropped & (dropped - 1) == 0:  # 1, 2, 4, 8, ... — visible but not flooding
            log.warning(
                "bag %s: write queue full (%d msgs, %d bytes), %d message(s) dropped so far",
                self.path,
                self.max_queue_messages,
                self.max_queue_bytes,
                dropped,
            )
        return False

    def flush(self, timeout: float | None = None) -> None:
        """Write everything queued so far, close the open chunk, sync to disk and update metadata.yaml."""
        done = threading.Event()
        with self._cv:
            self._check_usable()
            self._queue.append(_Flush(done))
            self._cv.notify()
        if not done.wait(timeout):
            raise BagWriteError(f"bag {self.path}: flush did not finish within {timeout} s")
        self._raise_if_failed()

    def close(self, timeout: float | None = None) -> None:
        """Drain the queue, write the MCAP summary and the final metadata.yaml; idempotent."""
        with self._cv:
            if self._state == "new":
                self._state = "closed"
                return
            if self._state == "open":
                self._state = "closing"
                self._queue.append(_CLOSE)
                self._cv.notify()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise BagWriteError(f"bag {self.path}: close did not finish within {timeout} s")
        self._raise_if_failed()

    @property
    def written(self) -> int:
        """Messages written to the MCAP file so far."""
        return self._storage.written

    @property
    def dropped(self) -> int:
        """Messages dropped because the write queue was full."""
        return self._dropped

    @property
    def dropped_by_topic(self) -> dict[str, int]:
        """Dropped messages per topic."""
        with self._cv:
            return dict(self._dropped_by_topic)

    @property
    def error(self) -> BaseException | None:
        """The exception that stopped the writer thread, if any."""
        return self._error

    def stats(self) -> WriterStats:
        """A snapshot of the counters."""
        with self._cv:
            return WriterStats(
                written=self._storage.written,
                dropped=self._dropped,
                queued=self._queued,
                queued_bytes=self._queued_bytes,
                durable=self._storage.durable,
                lost=self._lost,
            )

    def _check_usable(self) -> None:
        if self._state == "failed":
            self._raise_if_failed()
        if self._state != "open":
            raise BagClosedError(f"bag writer {self.path} is {self._state}, not open")

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise BagWriteError(
                f"bag writer for {self.path} failed: {self._error!r}; {self._lost} queued message(s) were"
                f" not written; data up to the last flushed chunk is on disk (bag.recover() restores it)"
            ) from self._error

    # ------------------------------------------------------------------ writer thread
    def _run(self) -> None:
        try:
            self._storage.create()
        except BaseException as exc:
            self._fail(exc)
            self._ready.set()
            return
        self._ready.set()
        last_flush = time.monotonic()
        dirty = False
        batch: list[object] = []
        done_msgs = done_bytes = 0
        try:
            while True:
                with self._cv:
                    self._queued -= done_msgs
                    self._queued_bytes -= done_bytes
                    while not self._queue:
                        remaining = last_flush + self.flush_interval_s - time.monotonic()
                        if remaining <= 0:
                            break
                        self._cv.wait(remaining)
                    batch = list(self._queue)
                    self._queue.clear()
                done_bytes = done_msgs = 0
                for item in batch:
                    if isinstance(item, tuple):
                        topic, stamp, sent, data = item
                        self._storage.write(topic, stamp, sent, data)
                        done_msgs += 1
                        done_bytes += len(data) + _ITEM_OVERHEAD
                        dirty = True
                    elif isinstance(item, TopicEntry):
                        self._storage.register(item)
                        dirty = True
                    elif isinstance(item, _Flush):
                        self._storage.sync()
                        last_flush, dirty = time.monotonic(), False
                        item.done.set()
                    elif item is _CLOSE:
                        self._storage.finish()
                        with self._cv:
                            self._state = "closed"
                        return
                if time.monotonic() - last_flush >= self.flush_interval_s:
                    if dirty:
                        self._storage.sync()
                    last_flush, dirty = time.monotonic(), False
        except BaseException as exc:
            with self._cv:
                self._queued -= done_msgs
                self._queued_bytes -= done_bytes
            self._fail(exc, batch)

    def _fail(self, exc: BaseException, batch: list[object] | None = None) -> None:
        log.error("bag writer %s failed: %r", self.path, exc)
        with self._cv:
            self._error = exc
            self._state = "failed"
            for item in [*(batch or []), *self._queue]:
                if isinstance(item, _Flush):
                    item.done.set()
            self._lost += self._queued
            self._queue.clear()
            self._queued = self._queued_bytes = 0
        self._storage.abandon()  # leaves a truncated, recoverable MCAP
