"""Make a bag readable again after its recorder died (like ``ros2 bag reindex``).

Each MCAP file without a footer is rebuilt: every complete chunk (and top-level record) is kept, the torn
tail is dropped, and a new file with summary, chunk indexes and statistics replaces it atomically. Then
metadata.yaml is regenerated from the files. A finished file is left untouched (only metadata.yaml is
rewritten).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from mcap.records import Channel, McapRecord, Message, Schema
from mcap.writer import CompressionType
from mcap.writer import Writer as McapWriter

from nodegraph.bag.errors import BagFormatError, BagWriteError
from nodegraph.bag.metadata import ROS_DISTRO, TopicStats, build_metadata, write_metadata
from nodegraph.bag.scan import ScanState, has_footer, scan
from nodegraph.bag.storage import check_magic, locate, summarize

log = logging.getLogger(__name__)

_COMPRESSION = {"": CompressionType.NONE, "zstd": CompressionType.ZSTD, "lz4": CompressionType.LZ4}


@dataclass(frozen=True)
class RecoverySummary:
    """Outcome of ``recover``: files rebuilt, messages kept, complete chunks kept, bytes of torn tail
    dropped, and why each rebuilt file was incomplete."""

    path: Path
    rebuilt: tuple[str, ...]
    messages: int
    chunks: int
    discarded_bytes: int
    reasons: tuple[str, ...]

    @property
    def was_truncated(self) -> bool:
        """True when at least one file had to be rebuilt."""
        return bool(self.rebuilt)


class _Rebuilder:
    """Copies scanned records into a new MCAP, opening it lazily once the first chunk told the compression."""

    def __init__(self, sink: BinaryIO, state: ScanState) -> None:
        self.sink, self.state = sink, state
        self.writer: McapWriter | None = None
        self.schemas: dict[int, int] = {}
        self.channels: dict[int, int] = {}
        self.messages = 0

    def _open(self) -> McapWriter:
        if self.writer is None:
            compression = _COMPRESSION.get(self.state.compression, CompressionType.ZSTD)
            chunk_size = max(self.state.max_chunk_bytes, 1024 * 1024)
            self.writer = McapWriter(self.sink, chunk_size=chunk_size, compression=compression)
            header = self.state.header
            profile, library = (header.profile, header.library) if header else ("ros2", "")
            self.writer.start(profile=profile, library=library)
        return self.writer

    def add(self, record: McapRecord) -> None:
        writer = self._open()
        if isinstance(record, Schema) and record.id not in self.schemas:
            self.schemas[record.id] = writer.register_schema(record.name, record.encoding, record.data)
        elif isinstance(record, Channel) and record.id not in self.channels:
            schema_id = self.schemas.get(record.schema_id, 0)
            self.channels[record.id] = writer.register_channel(
                record.topic, record.message_encoding, schema_id, dict(record.metadata)
            )
        elif isinstance(record, Message) and record.channel_id in self.channels:
            channel = self.channels[record.channel_id]
            writer.add_message(channel, record.log_time, record.data, record.publish_time, record.sequence)
            self.messages += 1

    def finish(self) -> None:
        writer = self._open()
        for meta in self.state.metadata:
            writer.add_metadata(meta.name, dict(meta.metadata))
        writer.finish()


def _rebuild(file: Path) -> tuple[int, int, int, str]:
    """Rewrite a footer-less MCAP file; returns (messages, chunks, discarded bytes, reason)."""
    tmp = file.with_name(f".{file.name}.recover.tmp")
    size = file.stat().st_size
    state = ScanState()
    try:
        with file.open("rb") as source, tmp.open("wb") as sink:
            check_magic(source, file)
            rebuilder = _Rebuilder(sink, state)
            for record in scan(source, state):
                rebuilder.add(record)
            rebuilder.finish()
            sink.flush()
            os.fsync(sink.fileno())
        os.replace(tmp, file)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise BagWriteError(f"cannot rewrite {file} during recovery: {exc}") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    reason = state.reason or "file ends without a summary"
    return rebuilder.messages, state.chunks, size - state.end_offset, reason


def recover(path: str | os.PathLike[str]) -> RecoverySummary:
    """Rebuild every unfinished MCAP file of the bag at ``path`` and regenerate its metadata.yaml."""
    bag = locate(path)
    rebuilt: list[str] = []
    reasons: list[str] = []
    discarded = chunks = 0
    for file in bag.files:
        with file.open("rb") as stream:
            check_magic(stream, file)
            finished = has_footer(stream)
        if finished:
            continue
        _, kept_chunks, dropped, reason = _rebuild(file)
        log.warning(
            "recovered %s: kept %d complete chunk(s), dropped %d byte(s): %s",
            file,
            kept_chunks,
            dropped,
            reason,
        )
        rebuilt.append(file.name)
        reasons.append(reason)
        discarded += dropped
        chunks += kept_chunks
    summaries = [summarize(file) for file in bag.files]
    if any(s.truncated for s in summaries):  # pragma: no cover - a rebuilt file always has a summary
        raise BagFormatError(f"{bag.directory}: recovery did not produce a complete file")
    old = bag.metadata or {}
    merged: dict[str, TopicStats] = {}
    for summary in summaries:
        for topic in summary.topics:
            previous = merged.get(topic.name)
            count = topic.message_count + (previous.message_count if previous else 0)
            merged[topic.name] = replace(topic, message_count=count)
    info = build_metadata(
        files=[s.file for s in summaries],
        topics=list(merged.values()),
        compression_format=str(old.get("compression_format", "") or ""),
        compression_mode=str(old.get("compression_mode", "") or ""),
        custom_data=old.get("custom_data") or None,
        ros_distro=str(old.get("ros_distro") or ROS_DISTRO),
    )
    write_metadata(bag.directory, info, fsync=True)
    return RecoverySummary(
        path=bag.directory,
        rebuilt=tuple(rebuilt),
        messages=sum(s.file.message_count for s in summaries),
        chunks=chunks,
        discarded_bytes=discarded,
        reasons=tuple(reasons),
    )
