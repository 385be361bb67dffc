"""Recorded seeds given by path: copied in, validated, fingerprinted by content (an edited seed file re-runs
the stage, an unchanged one is skipped); a corrupt or failed seed set is a clear error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from so101_core.seeds.format import SeedDemo, save_seed
from so101_pipeline.config import parse_pipeline
from so101_pipeline.errors import StageError
from so101_pipeline.pipeline import RunOptions, run_pipeline


def _seed(path: Path, success: bool = True, offset: float = 0.0) -> None:
    t = np.arange(10, dtype=np.float64) / 30.0
    q = np.zeros((10, 6)) + offset
    save_seed(SeedDemo(t=t, joint_positions=q, actions=q, object_poses={}, success=success, source="teleop"), path)


def _run(seeds: Path, out: Path) -> dict[str, object]:
    data = {"seeds": {"source": "path", "path": str(seeds)}, "tracking": {"mlflow": False}}
    cfg = parse_pipeline(data, "test.yaml")
    return run_pipeline(cfg, RunOptions(out=str(out), until="seeds"))


def test_recorded_seeds_are_copied_and_fingerprinted_by_content(tmp_path: Path) -> None:
    src, out = tmp_path / "recorded", tmp_path / "out"
    for i in range(3):
        _seed(src / f"seed_{i:03d}.npz", success=i != 1)
    summary = _run(src, out)
    assert summary["seeds"] == 3 and sorted(p.name for p in (out / "seeds").glob("*.npz")) == [
        "seed_000.npz", "seed_001.npz", "seed_002.npz"
    ]  # fmt: skip
    assert _run(src, out)["stages"]["seeds"]["skipped"] is True  # type: ignore[index]
    _seed(src / "seed_002.npz", offset=0.1)  # same name, new content
    again = _run(src, out)
    assert again["stages"]["seeds"]["skipped"] is False  # type: ignore[index]
    assert again["stages"]["seeds"]["reason"] == "inputs or config changed"  # type: ignore[index]


def test_a_corrupt_seed_file_is_named(tmp_path: Path) -> None:
    src = tmp_path / "recorded"
    _seed(src / "seed_000.npz")
    (src / "seed_001.npz").write_bytes(b"not a zip")
    with pytest.raises(StageError, match=r"seed_001\.npz"):
        _run(src, tmp_path / "out")


def test_no_successful_seed_is_an_error(tmp_path: Path) -> None:
    src = tmp_path / "recorded"
    _seed(src / "seed_000.npz", success=False)
    with pytest.raises(StageError, match="none of the 1 seeds"):
        _run(src, tmp_path / "out")
