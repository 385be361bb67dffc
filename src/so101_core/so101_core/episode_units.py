"""The on-disk layout of a rendered episode unit (written by so101_dataset, read by it and by policy training).

``<build>/episodes/episode_NNNNNN/`` (NNNNNN = the demo's position in the sorted demo list) holds::

    replay.npz     t (F,) s, q (F, 6) rad, action (F, 6) rad, object_pose/<name> (F, 7): what was rendered
    frames.npz     with ``render.keep_frames``: {camera: (F, H, W, 3) uint8}, the renders before encoding
    episode.json   task, provenance, the visual DR draw, frame count, image size, cameras, fps
    lerobot/       the one-episode LeRobot v3.0 dataset
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np

UNITS_DIR = "episodes"
UNIT_GLOB = "episode_*"
REPLAY_FILE = "replay.npz"
FRAMES_FILE = "frames.npz"
EPISODE_FILE = "episode.json"


class FramesFileError(ValueError):
    """A frames file that is not a readable npz archive."""


def unit_name(index: int) -> str:
    """The unit directory's name for the demo at ``index``."""
    return f"episode_{index:06d}"


def open_frames(path: Path) -> dict[str, np.ndarray]:
    """A unit's ``frames.npz`` as {camera: (F, H, W, 3) uint8}.

    Each array is memory-mapped (copy-on-write: writable views that never touch the file) where np.savez stored it
    uncompressed, as the renderer does: pages are read when used, a strided read touches only its frames, and
    nothing passes through zipfile's chunked, checksummed reads (several seconds per GB). A compressed member is
    read with np.load.
    """
    path = Path(path)
    frames: dict[str, np.ndarray] = {}
    fmt = np.lib.format
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise FramesFileError(f"{path}: not an npz archive ({exc})") from exc
    with archive, path.open("rb") as f:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if info.compress_type != zipfile.ZIP_STORED:
                with np.load(path) as npz:
                    frames[name] = npz[name]
                continue
            f.seek(info.header_offset)
            local = f.read(30)  # the member's local header; its name and extra field follow
            if local[:4] != b"PK\x03\x04":
                raise FramesFileError(f"{path}: member {info.filename} has no local header (a damaged file?)")
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            f.seek(info.header_offset + 30 + name_len + extra_len)
            read_header = fmt.read_array_header_1_0 if fmt.read_magic(f) == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = read_header(f)
            frames[name] = np.memmap(path, dtype=dtype, mode="c", offset=f.tell(), shape=shape,
                                     order="F" if fortran else "C")  # fmt: skip
    return frames
