"""A unit's frames file read memory-mapped (so101_core.episode_units.open_frames)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from so101_core.episode_units import FramesFileError, open_frames


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
