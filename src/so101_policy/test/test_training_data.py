"""Rendered episode units as training data: image statistics from byte histograms, the frame cache filled unit by
unit, damaged units named (so101_policy.training_data)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from so101_core.episode_units import write_frames
from so101_policy.config import TrainConfig
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


def test_max_episodes_keeps_the_first_units_alone(tmp_path: Path) -> None:
    """max_episodes 2 of 3 units: the rows, frames and statistics of a build holding just the first two."""
    rng = np.random.default_rng(5)
    units = [_write_unit(tmp_path / "all", k, frames, rng) for k, frames in enumerate((12, 7, 9))]
    for unit in units[:2]:
        shutil.copytree(unit, tmp_path / "two" / "episodes" / unit.name)
    data = open_training_data(tmp_path / "all", max_episodes=2)
    want = open_training_data(tmp_path / "two")
    assert (data.episodes, data.frames) == (want.episodes, want.frames) == (2, 19)
    assert [u.name for u in data.units] == [u.name for u in want.units] == ["episode_000000", "episode_000001"]
    assert data.rows is not None and want.rows is not None and data.features == want.features
    for got, ref in zip(data.rows, want.rows, strict=True):
        np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(data.poses, want.poses)  # type: ignore[arg-type]
    assert data.stats.keys() == want.stats.keys()
    for key, stats in want.stats.items():
        for name, value in stats.items():
            np.testing.assert_array_equal(data.stats[key][name], value, err_msg=f"{key} {name}")
    cache = decode_units(data, ["observation.images.top"], chunk=4, device="cpu")
    frames = cache.images["observation.images.top"].permute(0, 2, 3, 1).numpy()
    np.testing.assert_array_equal(frames, np.concatenate([PIXELS[u]["top"] for u in units[:2]]))
    assert open_training_data(tmp_path / "all", max_episodes=0).frames == 28  # 0: every unit, as before


def test_max_episodes_beyond_the_units_or_negative_is_named(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    for k in range(3):
        _write_unit(tmp_path, k, 5, rng)
    with pytest.raises(ConfigError, match=r"train.max_episodes: is 4 but .* has 3 rendered episode units"):
        open_training_data(tmp_path, max_episodes=4)
    with pytest.raises(ConfigError, match=r"train.max_episodes: must be >= 0"):
        open_training_data(tmp_path, max_episodes=-1)
    with pytest.raises(ConfigError, match=r"train.max_episodes: must be >= 0"):
        TrainConfig(max_episodes=-1)
    assert TrainConfig().max_episodes == 0


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


def _batches_equal(a: dict, b: dict) -> None:  # type: ignore[type-arg]
    import torch

    assert a.keys() == b.keys()
    for key in a:
        assert a[key].shape == b[key].shape and a[key].dtype == b[key].dtype, key
        assert torch.equal(a[key], b[key]), key


def test_frames_held_on_the_host_give_the_same_batches_in_the_same_order(tmp_path: Path) -> None:
    """host_frames (a GPU that cannot hold the frames): the stream gathers each batch on the host, one batch ahead
    in a thread, and yields what the frames on the device yield: the same items, epoch after epoch, from any start;
    the frames stay on the host."""
    from so101_policy.frame_cache import AUX_POSE

    rng = np.random.default_rng(6)
    for k, frames in enumerate((13, 6, 21)):
        _write_unit(tmp_path, k, frames, rng)
    data = open_training_data(tmp_path)
    keys = ["observation.images.top", "observation.images.ego"]
    labels = rng.normal(size=(data.frames, 5)).astype(np.float32)
    device = decode_units(data, keys, chunk=4, device="cpu", extras={AUX_POSE: labels})
    host = decode_units(data, keys, chunk=4, device="cpu", extras={AUX_POSE: labels}, host_frames=True)
    assert host.host_frames and not device.host_frames
    for start in (0, 29, 40):  # 40 rows: the second epoch's start and a start inside it
        want, got = device.batches(16, seed=3, start=start), host.batches(16, seed=3, start=start)
        for _ in range(7):  # 112 items: nearly three epochs
            _batches_equal(next(got), next(want))
        got.close()  # its thread ends with it
    index = [0, 12, 13, 39]
    _batches_equal(host.batch(index), device.batch(index))


def test_a_failure_while_gathering_ahead_reaches_the_trainer(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    _write_unit(tmp_path, 0, 9, rng)
    data = open_training_data(tmp_path)
    host = decode_units(data, ["observation.images.top"], chunk=4, device="cpu", host_frames=True)
    host.images["observation.images.top"] = host.images["observation.images.top"][:4]  # rows gone
    with pytest.raises(IndexError):
        next(host.batches(8, seed=0))


def test_the_frame_cache_goes_where_it_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU beside training's headroom (a quarter of the free memory, at least 8 GiB), else in host memory
    (80 % of what is available), else nowhere; a limit (frame_cache_gb) caps both; training on the CPU: the host."""
    from so101_policy import frame_cache

    gib = 2**30
    free = {"cuda": 80 * gib, "cpu": 120 * gib}
    monkeypatch.setattr(frame_cache, "free_bytes", lambda device: float(free[device.split(":")[0]]))
    home = frame_cache.cache_home
    assert home(52 * gib, "cuda") == "cuda"  # 1,200 demos at 3 x 160x120 on an 80 GB H100
    assert home(87 * gib, "cuda") == "cpu"  # 1,800 demos: the host holds them
    assert home(60 * gib + 1, "cuda") == "cpu"  # past 80 - 20 GiB
    assert home(97 * gib, "cuda") is None  # past 80 % of the host's 120 GiB
    assert home(52 * gib, "cuda", limit_bytes=50 * gib) is None
    assert home(90 * gib, "cpu") == "cpu" and home(97 * gib, "cpu") is None
    free["cuda"] = 24 * gib  # a 24 GB card: 8 GiB stay for training
    assert home(16 * gib, "cuda:0") == "cuda:0" and home(16 * gib + 1, "cuda:0") == "cpu"


def test_training_reads_rendered_frames_from_the_host_when_the_device_cannot_hold_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """batch_stream follows cache_home: frames held on the host are named so (the run's data_source) and said on
    stderr, and give the device's batches; frames that fit nowhere are a ConfigError naming their size."""
    from so101_policy import train

    rng = np.random.default_rng(8)
    for k, frames in enumerate((10, 7)):
        _write_unit(tmp_path, k, frames, rng)
    data = open_training_data(tmp_path)
    cfg = TrainConfig(batch_size=8, chunk_size=4)
    images = ["observation.images.top"]
    source, want = train.batch_stream(data, images, cfg, 1, "cpu")
    assert source == "rendered frames"
    monkeypatch.setattr(train, "cache_home", lambda need, device, limit=0: "elsewhere")  # not the device
    source, got = train.batch_stream(data, images, cfg, 1, "cpu")
    assert source == "rendered frames (host memory)"
    assert "held in host memory" in capsys.readouterr().err
    for _ in range(3):
        _batches_equal(next(got), next(want))
    monkeypatch.setattr(train, "cache_home", lambda need, device, limit=0: None)
    with pytest.raises(ConfigError, match=r"rendered frames \(0\.0 GiB\) fit neither cpu memory nor the host's"):
        train.batch_stream(data, images, cfg, 0, "cpu")
