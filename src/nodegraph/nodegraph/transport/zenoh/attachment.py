"""The 33-byte attachment rmw_zenoh_cpp (Jazzy ≥ 0.2.4) puts on every sample, request and reply.

``int64 LE sequence number | int64 LE source timestamp (ns since epoch) | LEB128 length 0x10 | 16-byte GID``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_HEADER = struct.Struct("<qqB")
SIZE = _HEADER.size + 16


class AttachmentError(ValueError):
    """An attachment is missing or malformed."""


@dataclass(frozen=True)
class Attachment:
    sequence_number: int
    source_timestamp_ns: int
    gid: bytes

    def encode(self) -> bytes:
        if len(self.gid) != 16:
            raise AttachmentError(f"GID must be 16 bytes, got {len(self.gid)}")
        return _HEADER.pack(self.sequence_number, self.source_timestamp_ns, 16) + self.gid

    @classmethod
    def decode(cls, data: bytes | None) -> Attachment:
        if data is None:
            raise AttachmentError("sample has no attachment")
        if len(data) != SIZE:
            raise AttachmentError(f"attachment must be {SIZE} bytes, got {len(data)}")
        seq, stamp, length = _HEADER.unpack_from(data)
        if length != 16:
            raise AttachmentError(f"attachment GID length must be 16, got {length}")
        return cls(seq, stamp, bytes(data[_HEADER.size :]))
