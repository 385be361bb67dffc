"""The on-disk layout of a rendered episode unit (written by so101_dataset, read by it and by policy training).

``<build>/episodes/episode_NNNNNN/`` (NNNNNN = the demo's position in the sorted demo list) holds::

    replay.npz     t (F,) s, q (F, 6) rad, action (F, 6) rad, object_pose/<name> (F, 7): what was rendered
    frames.npz     with ``render.keep_frames``: {camera: (F, H, W, 3) uint8}, the renders before encoding, each a
                   zstd-compressed .npy member ``<camera>.npy.zst`` (:func:`write_frames`; lossless, ~13x smaller)
    episode.json   task, provenance, the visual DR draw, frame count, image size, cameras, fps
    lerobot/       the one-episode LeRobot v3.0 dataset
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Collection, Mapping
from pathlib import Path

import numpy as np

UNITS_DIR = "episodes"
UNIT_GLOB = "episode_*"
REPLAY_FILE = "replay.npz"
FRAMES_FILE = "frames.npz"
EPISODE_FILE = "episode.json"
ZSTD_MEMBER = ".npy.zst"
"""The suffix of a frames file's zstd-compressed .npy members."""


class FramesFileError(ValueError):
    """A frames file that is not a readable npz archive."""


def unit_name(index: int) -> str:
    """The unit directory's name for the demo at ``index``."""
    return f"episode_{index:06d}"


def write_frames(path: Path, frames: Mapping[str, np.ndarray], level: int = 1) -> None:
    """Write {camera: (F, H, W, 3) uint8} to ``path`` as a zip archive of zstd-compressed .npy members
    (``<camera>.npy.zst``, stored as they are): rendered frames shrink ~13x at ``level`` 1 (~0.9 GB/s a thread;
    measured on the twin's 160x120 and 200x150 renders), the pixels unchanged."""
    import zstandard

    compressor = zstandard.ZstdCompressor(level=level)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, array in frames.items():
            npy = io.BytesIO()
            np.lib.format.write_array(npy, np.ascontiguousarray(array), allow_pickle=False)
            archive.writestr(name + ZSTD_MEMBER, compressor.compress(npy.getbuffer()))


def open_frames(path: Path, names: Collection[str] | None = None) -> dict[str, np.ndarray]:
    """A unit's ``frames.npz`` as {camera: (F, H, W, 3) uint8} (only ``names`` when given).

    A zstd-compressed member (:func:`write_frames`, as the renderer writes them) is decompressed (the zstd library
    releases the GIL: several files read in threads run in parallel). A plain .npy member stored uncompressed (older
    builds, ``np.savez``) is memory-mapped (copy-on-write: writable views that never touch the file): pages are read
    when used, and nothing passes through zipfile's chunked, checksummed reads (several seconds per GB). A
    deflated member is read with np.load.
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
            packed = info.filename.endswith(ZSTD_MEMBER)
            name = info.filename.removesuffix(ZSTD_MEMBER) if packed else info.filename.removesuffix(".npy")
            if names is not None and name not in names:
                continue
            if packed:
                frames[name] = _unpack(archive.read(info), path, info.filename)
                continue
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


def _unpack(data: bytes, path: Path, member: str) -> np.ndarray:
    import zstandard

    try:
        npy = zstandard.ZstdDecompressor().decompress(data)
        return np.asarray(np.lib.format.read_array(io.BytesIO(npy), allow_pickle=False))  # a writable copy
    except (zstandard.ZstdError, ValueError, OSError) as exc:
        raise FramesFileError(f"{path}: member {member} is not a zstd-compressed .npy ({exc})") from exc
