"""Rendered episode units as training data: image statistics from byte histograms, the frame cache filled unit by
unit, damaged units named (so101_policy.training_data)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from so101_core.episode_units import write_frames
from so101_policy.errors import ConfigError
from so101_policy.training_data import TrainingData, _image_stats, decode_units, open_training_data

CAMERAS = ("ego", "top")
PIXELS: dict[Path, dict[str, np.ndarray]] = {}


def _write_unit(root: Path, k: int, frames: int, rng: np.random.Generator, rows: int | None = None) -> Path:
    """One unit as the renderer writes it: episode.json, replay.npz (sim units), frames.npz (write_frames); its
    pixels also in PIXELS[unit]."""
    unit = root / "episodes" / f"episode_{k:06d}"
    unit.mkdir(parents=True)
    meta = {"height": 12, "width": 16, "cameras": list(CAMERAS), "fps": 30}
    (unit / "episode.json").write_text(json.dumps(meta), encoding="utf-8")
    n = frames if rows is None else rows
    np.savez(unit / "replay.npz", q=rng.uniform(-1, 1, (n, 6)), action=rng.uniform(-1, 1, (n, 6)))
    pixels = {cam: rng.integers(3, 251, (frames, 12, 16, 3), dtype=np.uint8) for cam in CAMERAS}
    write_frames(unit / "frames.npz", pixels)
    PIXELS[unit] = pixels
    return unit


def test_image_statistics_equal_a_float_pass_over_every_tenth_frame(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    units = [_write_unit(tmp_path, k, frames, rng) for k, frames in enumerate((23, 31, 9))]
    stats = _image_stats(units, ["ego", "top"])["top"]
    x = np.concatenate([PIXELS[u]["top"][::10] for u in units]).reshape(-1, 3) / 255.0
    np.testing.assert_allclose(stats["mean"].ravel(), x.mean(0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(stats["std"].ravel(), x.std(0), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(stats["min"].ravel(), x.min(0))
    np.testing.assert_array_equal(stats["max"].ravel(), x.max(0))
    assert stats["mean"].shape == (3, 1, 1)


def test_the_frame_cache_holds_every_units_frames_in_row_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    units = [_write_unit(tmp_path, k, frames, rng) for k, frames in enumerate((11, 4, 17))]
    data = open_training_data(tmp_path)
    assert (data.kind, data.episodes, data.frames) == ("units", 3, 32)
    real_load = np.load

    def frames_only(path: Path, *args: object, **kwargs: object) -> object:  # the rows came with the statistics
        assert Path(path).name != "replay.npz", f"{path} read a second time"
        return real_load(path, *args, **kwargs)

    monkeypatch.setattr(np, "load", frames_only)
    cache = decode_units(data, ["observation.images.top", "observation.images.ego"], chunk=4, device="cpu")
    for cam in CAMERAS:
        want = np.concatenate([PIXELS[u][cam] for u in units])
        got = cache.images[f"observation.images.{cam}"].permute(0, 2, 3, 1).numpy()  # (N, 3, H, W) -> (N, H, W, 3)
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(cache.episode_end, np.repeat([11, 15, 32], [11, 4, 17]))


def test_only_rendered_units_decode_into_the_frame_cache(tmp_path: Path) -> None:
    lerobot = TrainingData("lerobot", tmp_path, {}, {}, 30.0, 0, 0)
    with pytest.raises(ConfigError, match="not a dataset build with rendered frames"):
        decode_units(lerobot, ["observation.images.top"], chunk=4, device="cpu")


def test_a_unit_whose_frames_do_not_match_its_rows_is_named(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    _write_unit(tmp_path, 0, 10, rng)
    _write_unit(tmp_path, 1, 10, rng, rows=12)  # two rows without a frame
    data = open_training_data(tmp_path)
    with pytest.raises(ConfigError, match=r"episode_000001.*top frames \(10, 12, 16, 3\), expected \(12, 12, 16, 3\)"):
        decode_units(data, ["observation.images.top"], chunk=4, device="cpu")


def test_a_frames_file_that_is_no_archive_is_named(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    unit = _write_unit(tmp_path, 0, 10, rng)
    (unit / "frames.npz").write_bytes(b"not a zip archive")
    with pytest.raises(ConfigError, match=r"episode_000000/frames.npz: not an npz archive"):
        open_training_data(tmp_path)


def test_the_training_benchmark_measures_rendered_units(tmp_path: Path) -> None:
    """``so101 bench train`` on a build's units: one source, what a slice pays before its first step (open and
    read) and the data rate, with the dataset's size as read."""
    from so101_policy.bench_train import run_train_benchmark
    from so101_policy.config import TrainConfig

    rng = np.random.default_rng(5)
    for k, frames in enumerate((14, 9)):
        _write_unit(tmp_path, k, frames, rng)
    cfg = TrainConfig(batch_size=4, num_workers=0, chunk_size=4, cameras=("top",), system_metrics=False)
    out = run_train_benchmark(tmp_path, device="cpu", config=cfg, batches=3)
    assert (out["dataset_kind"], out["dataset_episodes"], out["dataset_frames"]) == ("units", 2, 23)
    assert out["dataset_images"]["observation.images.top"] == [12, 16, 3]
    (row,) = out["sources"].values()
    assert row["data_source"] == "rendered frames" and "data_speedup_memory_vs_dataloader" not in out
    assert row["open_s"] > 0 and row["cold_start_s"] > 0 and row["data_samples_per_s"] > 0
