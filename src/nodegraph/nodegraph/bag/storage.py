"""Find a bag's storage files and summarize each MCAP file (from its summary, or by scanning if truncated)."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcap.reader import SeekingReader
from mcap.records import Channel, Message, Schema

from nodegraph.bag.errors import BagFormatError, BagNotFoundError
from nodegraph.bag.metadata import METADATA_FILE, FileStats, TopicStats, read_metadata
from nodegraph.bag.scan import MAGIC, ScanState, has_footer, scan


@dataclass(frozen=True)
class BagFiles:
    """A bag on disk: its directory, its MCAP files in order, and its metadata.yaml mapping if any."""

    directory: Path
    files: tuple[Path, ...]
    metadata: dict[str, Any] | None


def locate(path: str | os.PathLike[str]) -> BagFiles:
    """Resolve a bag directory (metadata.yaml, or ``*.mcap`` inside) or a single ``.mcap`` file."""
    path = Path(path)
    if not path.exists():
        raise BagNotFoundError(f"no bag at {path}: the path does not exist")
    if path.is_file():
        if path.name == METADATA_FILE:
            return locate(path.parent)
        if path.suffix != ".mcap":
            raise BagFormatError(f"{path} is not a rosbag2 directory or an .mcap file")
        return BagFiles(path.parent, (path,), None)
    if (path / METADATA_FILE).is_file():
        meta = read_metadata(path)
        files = []
        for rel in meta["relative_file_paths"]:
            candidate = path / rel
            if not candidate.is_file() and (path.parent / rel).is_file():  # pre-v4 paths include the dir
                candidate = path.parent / rel
            if not candidate.is_file():
                raise BagFormatError(f"{path}: metadata.yaml lists {rel!r}, which is missing")
            files.append(candidate)
        return BagFiles(path, tuple(files), meta)
    found = tuple(sorted(path.glob("*.mcap")))
    if not found:
        raise BagNotFoundError(f"{path} is not a bag: no metadata.yaml and no .mcap file in it")
    return BagFiles(path, found, None)


@dataclass(frozen=True)
class McapSummary:
    """Counts, time span, topics and chunk compression of one MCAP file; ``truncated`` if it has no
    summary (then the numbers cover its complete chunks only)."""

    file: FileStats
    topics: tuple[TopicStats, ...]
    compression: str
    size_bytes: int
    truncated: bool
    end_ns: int


def _topic(channel: Channel, schemas: dict[int, Schema], count: int) -> TopicStats:
    schema = schemas.get(channel.schema_id)
    return TopicStats(
        name=channel.topic,
        type=schema.name if schema is not None else "",
        message_count=count,
        serialization_format=channel.message_encoding,
        offered_qos_profiles=channel.metadata.get("offered_qos_profiles", ""),
        type_description_hash=channel.metadata.get("topic_type_hash", ""),
    )


def check_magic(stream: io.BufferedReader | Any, file: Path) -> None:
    """Raise BagFormatError unless ``stream`` starts with the MCAP magic."""
    stream.seek(0)
    if stream.read(len(MAGIC)) != MAGIC:
        raise BagFormatError(f"{file} is not an MCAP file (bad magic)")


def summarize(file: Path) -> McapSummary:
    """Summary of one MCAP file; a file without summary is scanned (``truncated=True``)."""
    size = file.stat().st_size
    with file.open("rb") as stream:
        check_magic(stream, file)
        summary = None
        if has_footer(stream):
            try:
                stream.seek(0)
                summary = SeekingReader(stream).get_summary()
            except Exception as exc:
                raise BagFormatError(f"{file}: unreadable MCAP summary: {exc}") from None
        if summary is not None and summary.statistics is not None:
            stats = summary.statistics
            count = stats.message_count
            start, end = (stats.message_start_time, stats.message_end_time) if count else (0, 0)
            topics = tuple(
                _topic(c, summary.schemas, stats.channel_message_counts.get(cid, 0))
                for cid, c in sorted(summary.channels.items())
            )
            compression = summary.chunk_indexes[0].compression if summary.chunk_indexes else ""
            return McapSummary(FileStats(file.name, start, end - start, count), topics, compression, size, False, end)
        state = ScanState()
        schemas: dict[int, Schema] = {}
        channels: dict[int, Channel] = {}
        counts: dict[int, int] = {}
        first, last = None, 0
        for record in scan(stream, state):
            if isinstance(record, Schema):
                schemas[record.id] = record
            elif isinstance(record, Channel):
                channels[record.id] = record
            elif isinstance(record, Message):
                counts[record.channel_id] = counts.get(record.channel_id, 0) + 1
                first = record.log_time if first is None else min(first, record.log_time)
                last = max(last, record.log_time)
        total = sum(counts.values())
        start = first or 0
        topics = tuple(_topic(c, schemas, counts.get(cid, 0)) for cid, c in sorted(channels.items()))
        return McapSummary(
            FileStats(file.name, start, last - start if total else 0, total),
            topics,
            state.compression,
            size,
            state.truncated,
            last,
        )
