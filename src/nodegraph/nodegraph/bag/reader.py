"""Read a rosbag2 (MCAP) bag: messages as raw CDR in time order, ``info`` and ``ros2 bag info``-like text.

A file without summary (recorder killed) is read by scanning its complete chunks, in file order, with a
TruncatedBagWarning; ``on_truncated="recover"`` repairs it first, ``"error"`` refuses it.
"""

from __future__ import annotations

import heapq
import logging
import os
import time
import warnings
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from mcap.reader import SeekingReader
from mcap.records import Channel, Message, Schema

from nodegraph.bag.errors import BagFormatError, TruncatedBagWarning
from nodegraph.bag.metadata import ROS_DISTRO, TopicStats
from nodegraph.bag.scan import ScanState, has_footer, scan
from nodegraph.bag.storage import check_magic, locate, summarize

log = logging.getLogger(__name__)

OnTruncated = Literal["stream", "recover", "error"]


class BagMessage(NamedTuple):
    """One recorded message: topic, ROS type (``pkg/msg/Name``), receive stamp (ns), CDR bytes."""

    topic: str
    type_name: str
    timestamp_ns: int
    cdr: bytes


@dataclass(frozen=True)
class BagInfo:
    """What ``ros2 bag info`` shows: files, size (bytes), storage, time span (ns), counts per topic."""

    path: Path
    files: tuple[str, ...]
    size_bytes: int
    storage_identifier: str
    ros_distro: str
    start_ns: int
    end_ns: int
    message_count: int
    topics: tuple[TopicStats, ...]
    compression: str
    truncated: bool
    custom_data: dict[str, str] | None = None

    @property
    def duration_ns(self) -> int:
        """End minus start (ns); 0 for an empty bag."""
        return max(0, self.end_ns - self.start_ns)

    @property
    def duration_s(self) -> float:
        """Duration in seconds."""
        return self.duration_ns / 1e9

    def topic(self, name: str) -> TopicStats:
        """The entry of topic ``name``; KeyError when the bag does not have it."""
        for entry in self.topics:
            if entry.name == name:
                return entry
        raise KeyError(name)


def _warn_truncated(file: Path) -> None:
    text = (
        f"{file} has no summary (the recorder did not finish): reading its complete chunks by scanning,"
        " in file order; run `so101 bag recover BAG` (nodegraph.bag.recover()) to repair it"
    )
    log.warning(text)
    warnings.warn(text, TruncatedBagWarning, stacklevel=3)


def info(path: str | os.PathLike[str]) -> BagInfo:
    """Summary of the bag at ``path`` (a directory or an .mcap file); truncated files are scanned, warned."""
    bag = locate(path)
    summaries = []
    for file in bag.files:
        summary = summarize(file)
        if summary.truncated:
            _warn_truncated(file)
        summaries.append(summary)
    merged: dict[str, TopicStats] = {}
    for summary in summaries:
        for topic in summary.topics:
            previous = merged.get(topic.name)
            if previous is None:
                merged[topic.name] = topic
            else:
                count = previous.message_count + topic.message_count
                merged[topic.name] = TopicStats(**{**previous.__dict__, "message_count": count})
    counted = [s for s in summaries if s.file.message_count]
    meta: dict[str, Any] = bag.metadata or {}
    return BagInfo(
        path=bag.directory,
        files=tuple(f.name for f in bag.files),
        size_bytes=sum(s.size_bytes for s in summaries),
        storage_identifier="mcap",
        ros_distro=str(meta.get("ros_distro") or ROS_DISTRO),
        start_ns=min((s.file.starting_time_ns for s in counted), default=0),
        end_ns=max((s.end_ns for s in counted), default=0),
        message_count=sum(s.file.message_count for s in summaries),
        topics=tuple(merged.values()),
        compression=next((s.compression for s in summaries if s.compression), ""),
        truncated=any(s.truncated for s in summaries),
        custom_data=meta.get("custom_data") or None,
    )


def _size(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    raise AssertionError  # pragma: no cover


def _stamp(ns: int) -> str:
    sec, nsec = divmod(ns, 1_000_000_000)
    return f"{time.strftime('%b %e %Y %H:%M:%S', time.localtime(sec))}.{nsec:09d} ({sec}.{nsec:09d})"


def format_info(bag: BagInfo) -> str:
    """Text laid out like ``ros2 bag info`` (Jazzy)."""
    sec, nsec = divmod(bag.duration_ns, 1_000_000_000)
    pad = " " * 19
    lines = [
        "",
        f"Files:             {('\n' + pad).join(bag.files)}",
        f"Bag size:          {_size(bag.size_bytes)}",
        f"Storage id:        {bag.storage_identifier}",
        f"ROS Distro:        {bag.ros_distro}",
        f"Duration:          {sec}.{nsec:09d}s",
        f"Start:             {_stamp(bag.start_ns)}",
        f"End:               {_stamp(bag.end_ns)}",
        f"Messages:          {bag.message_count}",
    ]
    topics = [
        f"Topic: {t.name} | Type: {t.type} | Count: {t.message_count} | Serialization Format: {t.serialization_format}"
        for t in bag.topics
    ]
    lines.append("Topic information: " + ("\n" + pad).join(topics))
    lines.append("Service:           0")
    lines.append("Service information: ")
    if bag.truncated:
        lines.append("Warning:           truncated (no summary): counts cover complete chunks; run recover")
    return "\n".join(lines) + "\n"


def _iter_indexed(
    file: Path, topics: Collection[str] | None, start: int | None, end: int | None
) -> Iterator[BagMessage]:
    with file.open("rb") as stream:
        reader = SeekingReader(stream)
        try:
            for schema, channel, message in reader.iter_messages(
                None if topics is None else list(topics),
                log_time_order=True,
                starting_at=start,
                ending_before=end,
            ):
                yield BagMessage(channel.topic, schema.name if schema else "", message.log_time, message.data)
        except BagFormatError:
            raise
        except Exception as exc:
            raise BagFormatError(f"{file}: cannot read messages: {exc}") from None


def _in_range(stamp: int, start: int | None, end: int | None) -> bool:
    return (start is None or stamp >= start) and (end is None or stamp < end)


def _iter_scanned(
    file: Path, topics: Collection[str] | None, start: int | None, end: int | None
) -> Iterator[BagMessage]:
    schemas: dict[int, Schema] = {}
    channels: dict[int, Channel] = {}
    with file.open("rb") as stream:
        for record in scan(stream, ScanState()):
            if isinstance(record, Schema):
                schemas[record.id] = record
            elif isinstance(record, Channel):
                channels[record.id] = record
            elif isinstance(record, Message):
                channel = channels.get(record.channel_id)
                if channel is None or (topics is not None and channel.topic not in topics):
                    continue
                if not _in_range(record.log_time, start, end):
                    continue
                schema = schemas.get(channel.schema_id)
                yield BagMessage(channel.topic, schema.name if schema else "", record.log_time, record.data)


def read_messages(
    path: str | os.PathLike[str],
    topics: Collection[str] | None = None,
    *,
    start_ns: int | None = None,
    end_ns: int | None = None,
    on_truncated: OnTruncated = "stream",
) -> Iterator[BagMessage]:
    """Messages of the bag in receive-time order, optionally only ``topics`` and ``start_ns <= t < end_ns``.

    A file without summary: ``"stream"`` scans its complete chunks (file order) with a TruncatedBagWarning,
    ``"recover"`` repairs the bag first (rewrites it), ``"error"`` raises BagFormatError.
    """
    if on_truncated not in ("stream", "recover", "error"):
        raise ValueError(f"on_truncated must be 'stream', 'recover' or 'error', got {on_truncated!r}")
    bag = locate(path)
    wanted = None if topics is None else frozenset(topics)
    unfinished = []
    for file in bag.files:
        with file.open("rb") as stream:
            check_magic(stream, file)
            if not has_footer(stream):
                unfinished.append(file)
    if unfinished and on_truncated == "error":
        raise BagFormatError(f"{unfinished[0]} has no summary (unfinished recording); run recover() first")
    if unfinished and on_truncated == "recover":
        from nodegraph.bag.recover import recover

        recover(bag.directory)
        unfinished = []
    streams: list[Iterator[BagMessage]] = []
    for file in bag.files:
        if file in unfinished:
            _warn_truncated(file)
            streams.append(_iter_scanned(file, wanted, start_ns, end_ns))
        else:
            streams.append(_iter_indexed(file, wanted, start_ns, end_ns))
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=lambda m: m.timestamp_ns)
