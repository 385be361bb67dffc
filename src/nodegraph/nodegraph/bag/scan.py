"""Sequential, truncation-tolerant scan of an MCAP data section (for recovery and summary-less reads).

A record counts only when it is complete: its whole body is present and, for a chunk, it decompresses to
the declared size and matches its CRC (when set). The scan stops at the first incomplete or garbled record;
``end_offset`` is then where the good data ends.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from mcap.data_stream import ReadDataStream
from mcap.records import Channel, Chunk, Header, McapRecord, Message, Metadata, Schema

from nodegraph.bag.errors import BagFormatError

MAGIC = b"\x89MCAP0\r\n"
FOOTER_LENGTH = 1 + 8 + 20  # opcode + length + (summary_start, summary_offset_start, crc)
_OP_HEADER, _OP_SCHEMA, _OP_CHANNEL, _OP_MESSAGE, _OP_CHUNK = 0x01, 0x03, 0x04, 0x05, 0x06
_OP_METADATA, _OP_DATA_END, _OP_FOOTER = 0x0C, 0x0F, 0x02
_KNOWN = set(range(0x01, 0x10))


def has_footer(stream: BinaryIO) -> bool:
    """True when the file ends with a Footer record and the closing magic (a finished MCAP)."""
    stream.seek(0, io.SEEK_END)
    size = stream.tell()
    if size < 2 * len(MAGIC) + FOOTER_LENGTH:
        return False
    stream.seek(size - len(MAGIC) - FOOTER_LENGTH)
    tail = stream.read(len(MAGIC) + FOOTER_LENGTH)
    opcode, length = struct.unpack_from("<BQ", tail)
    return opcode == _OP_FOOTER and length == 20 and tail.endswith(MAGIC)


@dataclass
class ScanState:
    """What a scan found: header, whether it stopped early, where good data ends, chunk facts."""

    header: Header | None = None
    truncated: bool = False
    end_offset: int = 0
    chunks: int = 0
    compression: str = ""
    max_chunk_bytes: int = 0
    reason: str = ""
    metadata: list[Metadata] = field(default_factory=list)


def _decode(opcode: int, body: bytes) -> McapRecord | None:
    stream = ReadDataStream(io.BytesIO(body))
    if opcode == _OP_SCHEMA:
        return Schema.read(stream)
    if opcode == _OP_CHANNEL:
        return Channel.read(stream)
    if opcode == _OP_MESSAGE:
        return Message.read(stream, len(body))
    if opcode == _OP_METADATA:
        return Metadata.read(stream)
    if opcode == _OP_HEADER:
        return Header.read(stream)
    return None


def _chunk_records(chunk: Chunk) -> list[McapRecord]:
    if chunk.compression == "zstd":
        import zstandard

        data = zstandard.ZstdDecompressor().decompress(chunk.data, max_output_size=chunk.uncompressed_size)
    elif chunk.compression == "lz4":
        import lz4.frame

        data = lz4.frame.decompress(chunk.data)
    elif chunk.compression == "":
        data = chunk.data
    else:
        raise BagFormatError(f"unsupported chunk compression {chunk.compression!r}")
    if len(data) != chunk.uncompressed_size:
        raise ValueError(f"chunk holds {len(data)} bytes, declares {chunk.uncompressed_size}")
    if chunk.uncompressed_crc and zlib.crc32(data) != chunk.uncompressed_crc:
        raise ValueError("chunk CRC mismatch")
    records: list[McapRecord] = []
    pos = 0
    while pos < len(data):
        opcode, length = struct.unpack_from("<BQ", data, pos)
        pos += 9
        if pos + length > len(data):
            raise ValueError("record overruns its chunk")
        record = _decode(opcode, data[pos : pos + length])
        if record is not None:
            records.append(record)
        pos += length
    return records


def scan(stream: BinaryIO, state: ScanState) -> Iterator[McapRecord]:
    """Yield Schema, Channel, Message and Metadata records of complete records, chunks expanded, in file
    order; fill ``state`` as it goes. Raises BagFormatError when the file is not MCAP at all."""
    stream.seek(0)
    if stream.read(len(MAGIC)) != MAGIC:
        raise BagFormatError("not an MCAP file (bad magic)")
    state.end_offset = len(MAGIC)
    while True:
        prefix = stream.read(9)
        if len(prefix) == 0:
            state.truncated, state.reason = True, "file ends without a Data End record"
            return
        if len(prefix) < 9:
            state.truncated, state.reason = True, "record header cut off"
            return
        opcode, length = struct.unpack("<BQ", prefix)
        if opcode not in _KNOWN:
            state.truncated, state.reason = True, f"garbage at offset {state.end_offset}"
            return
        if opcode == _OP_DATA_END:
            return
        body = stream.read(length)
        if len(body) < length:
            state.truncated, state.reason = True, f"record (opcode {opcode:#x}) cut off"
            return
        try:
            if opcode == _OP_CHUNK:
                chunk = Chunk.read(ReadDataStream(io.BytesIO(body)))
                records = _chunk_records(chunk)
                state.chunks += 1
                state.compression = state.compression or chunk.compression
                state.max_chunk_bytes = max(state.max_chunk_bytes, chunk.uncompressed_size)
            else:
                decoded = _decode(opcode, body)
                records = [] if decoded is None else [decoded]
        except BagFormatError:
            raise
        except Exception as exc:  # McapError, struct.error, ValueError, decompressor-specific errors
            state.truncated, state.reason = True, f"damaged record at offset {state.end_offset}: {exc}"
            return
        state.end_offset += 9 + length
        for record in records:
            if isinstance(record, Header):
                state.header = record
            elif isinstance(record, Metadata):
                state.metadata.append(record)
            else:
                yield record
