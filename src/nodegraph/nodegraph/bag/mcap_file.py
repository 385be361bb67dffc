"""The storage side of a bag being recorded: one MCAP file (``<bag>_0.mcap``) and its metadata.yaml.

``McapBagFile`` does every file operation of ``BagWriter`` and is used from the writer's one thread:
schemas (ros2msg text) and channels (cdr, with ``offered_qos_profiles`` and ``topic_type_hash`` metadata, as
rosbag2_storage_mcap writes them), messages (log time = receive time, publish time = source timestamp),
chunks handed to the OS as soon as they complete, interval syncs with a provisional metadata.yaml (the
counts of what is durable), and the summary + final metadata on ``finish``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import BinaryIO, Literal

from mcap.writer import CompressionType
from mcap.writer import Writer as McapWriter

from nodegraph.bag.metadata import FileStats, TopicStats, build_metadata, dump_metadata, write_metadata

Compression = Literal["zstd", "lz4"]
COMPRESSION = {None: CompressionType.NONE, "zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4}


def _library() -> str:
    try:
        return f"nodegraph.bag; mcap-python {version('mcap')}"
    except PackageNotFoundError:  # pragma: no cover
        return "nodegraph.bag"


@dataclass(frozen=True)
class TopicEntry:
    """A registered topic: name, canonical type, offered QoS (YAML string), RIHS01 hash, ros2msg text."""

    name: str
    type: str
    qos: str
    type_hash: str
    msgdef: str


class McapBagFile:
    """One bag directory's MCAP file and metadata.yaml (not thread-safe: the writer thread owns it).

    Args:
        path: the bag directory (created by ``create``; must not exist).
        chunk_size: uncompressed chunk size (bytes) before a chunk is written out.
        compression: chunk compression ("zstd", "lz4" or None).
        fsync: fsync on each sync and on finish.
        custom_data: rosbag2 ``custom_data`` of metadata.yaml.
        ros_distro: ``ros_distro`` of metadata.yaml and the MCAP ``rosbag2`` metadata record.
    """

    def __init__(
        self,
        path: Path,
        *,
        chunk_size: int,
        compression: Compression | None,
        fsync: bool,
        custom_data: Mapping[str, str],
        ros_distro: str,
    ) -> None:
        self.path = path
        self.mcap_path = path / f"{path.name}_0.mcap"
        self._chunk_size = chunk_size
        self._compression = compression
        self._fsync = fsync
        self._custom_data = dict(custom_data)
        self._ros_distro = ros_distro
        self._file: BinaryIO | None = None
        self._mcap: McapWriter | None = None
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self._topics: dict[str, TopicEntry] = {}
        self._counts: dict[str, int] = {}
        self._durable_counts: dict[str, int] = {}
        self._start_ns: int | None = None
        self._end_ns = 0
        self._durable_span: tuple[int, int] | None = None
        self.written = 0
        """Messages written to the file so far."""
        self.durable = 0
        """Messages in chunks handed to the OS."""

    def create(self) -> None:
        """Create the directory and the file, write the MCAP header and a first metadata.yaml."""
        self.path.mkdir(parents=True, exist_ok=False)
        self._file = self.mcap_path.open("xb")
        self._mcap = McapWriter(
            self._file, chunk_size=self._chunk_size, compression=COMPRESSION[self._compression], enable_crcs=True
        )
        self._mcap.start(profile="ros2", library=_library())
        self._file.flush()
        self._write_metadata(durable=True)

    def register(self, topic: TopicEntry) -> None:
        """Add the topic's schema (once per type) and channel."""
        assert self._mcap is not None
        schema_id = self._schemas.get(topic.type)
        if schema_id is None:
            schema_id = self._mcap.register_schema(topic.type, "ros2msg", topic.msgdef.encode())
            self._schemas[topic.type] = schema_id
        metadata = {"offered_qos_profiles": topic.qos, "topic_type_hash": topic.type_hash}
        self._channels[topic.name] = self._mcap.register_channel(topic.name, "cdr", schema_id, metadata)
        self._topics[topic.name] = topic
        self._counts.setdefault(topic.name, 0)

    def write(self, topic: str, log_time_ns: int, publish_time_ns: int, data: bytes) -> None:
        """Append one message; a chunk it completes is handed to the OS at once."""
        assert self._mcap is not None and self._file is not None
        before = self._file.tell()
        self._mcap.add_message(self._channels[topic], log_time=log_time_ns, data=data, publish_time=publish_time_ns)
        self.written += 1
        self._counts[topic] += 1
        self._start_ns = log_time_ns if self._start_ns is None else min(self._start_ns, log_time_ns)
        self._end_ns = max(self._end_ns, log_time_ns)
        if self._file.tell() != before:  # a chunk was completed
            self._file.flush()
            self._mark_durable()
            self.durable = self.written

    def sync(self) -> None:
        """Close the open chunk, sync the file and rewrite metadata.yaml with what is durable."""
        assert self._mcap is not None and self._file is not None
        self._mcap.flush()
        if self._fsync:
            os.fsync(self._file.fileno())
        self._mark_durable()
        self._write_metadata(durable=True)
        self.durable = self.written  # counted once metadata.yaml says so too

    def finish(self) -> None:
        """Write the summary and the ``rosbag2`` metadata record, close the file, write the final metadata."""
        assert self._mcap is not None and self._file is not None
        serialized = dump_metadata(self._metadata(durable=False))
        self._mcap.add_metadata("rosbag2", {"serialized_metadata": serialized, "ROS_DISTRO": self._ros_distro})
        self._mcap.finish()
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())
        self._file.close()
        self._mark_durable()
        self._write_metadata(durable=False)
        self.durable = self.written

    def abandon(self) -> None:
        """Close the file after a failure: it stays a truncated MCAP that ``recover()`` can repair."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()

    def _mark_durable(self) -> None:
        """Snapshot the counts the provisional metadata reports (``durable`` is published by the caller)."""
        self._durable_counts = dict(self._counts)
        if self._start_ns is not None:
            self._durable_span = (self._start_ns, self._end_ns)

    def _metadata(self, *, durable: bool) -> dict[str, object]:
        counts = self._durable_counts if durable else self._counts
        live = None if self._start_ns is None else (self._start_ns, self._end_ns)
        span = self._durable_span if durable else live
        start, end = span if span is not None else (0, 0)
        topics = [
            TopicStats(
                name=t.name,
                type=t.type,
                message_count=counts.get(t.name, 0),
                offered_qos_profiles=t.qos,
                type_description_hash=t.type_hash,
            )
            for t in self._topics.values()
        ]
        files = [FileStats(self.mcap_path.name, start, end - start, sum(counts.values()))]
        return build_metadata(files=files, topics=topics, custom_data=self._custom_data, ros_distro=self._ros_distro)

    def _write_metadata(self, *, durable: bool) -> None:
        write_metadata(self.path, self._metadata(durable=durable), fsync=self._fsync and not durable)
