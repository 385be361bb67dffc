"""A unit's frames file: written zstd-compressed (write_frames), read back as written (open_frames), and older
builds' plain members read memory-mapped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from so101_core.episode_units import FramesFileError, open_frames, write_frames


def test_open_frames_reads_stored_and_compressed_members_as_np_load_does(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    arrays = {
        "ego": rng.integers(0, 256, (5, 4, 6, 3), dtype=np.uint8),
        "fortran": np.asfortranarray(rng.integers(0, 256, (7, 9), dtype=np.uint8)),
        "wide": rng.normal(size=(3, 2)),
    }
    np.savez(tmp_path / "stored.npz", **arrays)
    np.savez_compressed(tmp_path / "packed.npz", **arrays)
    for name in ("stored.npz", "packed.npz"):
        frames = open_frames(tmp_path / name)
        assert sorted(frames) == sorted(arrays)
        for key, want in arrays.items():
            np.testing.assert_array_equal(frames[key], want)
            assert frames[key].dtype == want.dtype
    before = (tmp_path / "stored.npz").read_bytes()
    open_frames(tmp_path / "stored.npz")["ego"][:] = 0  # copy-on-write: the file is never written
    assert (tmp_path / "stored.npz").read_bytes() == before


def test_a_file_that_is_no_archive_raises_naming_it(tmp_path: Path) -> None:
    (tmp_path / "frames.npz").write_bytes(b"PK but no archive")
    with pytest.raises(FramesFileError, match=r"frames.npz: not an npz archive"):
        open_frames(tmp_path / "frames.npz")


def test_written_frames_read_back_equal_smaller_and_by_camera(tmp_path: Path) -> None:
    """Renders compress losslessly (a smooth image with a moving edge stands in here: ~the twin's flat shading)."""
    y, x = np.mgrid[0:48, 0:64]
    base = np.stack([x * 3, y * 4, (x + y) * 2], axis=-1).astype(np.uint8)
    frames = {cam: np.stack([np.roll(base, k + i, axis=1) for i in range(20)]) for k, cam in enumerate(("ego", "top"))}
    path = tmp_path / "frames.npz"
    write_frames(path, frames)
    raw = sum(a.nbytes for a in frames.values())
    assert path.stat().st_size < raw / 4
    back = open_frames(path)
    assert sorted(back) == ["ego", "top"]
    for cam, want in frames.items():
        np.testing.assert_array_equal(back[cam], want)
        assert back[cam].dtype == np.uint8 and back[cam].flags.writeable
    assert sorted(open_frames(path, ["top"])) == ["top"]  # only the cameras asked for are decompressed
    np.testing.assert_array_equal(open_frames(tmp_path / "frames.npz", ["ego"])["ego"], frames["ego"])


def test_a_damaged_compressed_member_raises_naming_the_file_and_member(tmp_path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(tmp_path / "frames.npz", "w") as archive:
        archive.writestr("top.npy.zst", b"not zstd at all")
    with pytest.raises(FramesFileError, match=r"frames.npz: member top.npy.zst is not a zstd-compressed .npy"):
        open_frames(tmp_path / "frames.npz")
