"""The v3.0 writer's image statistics from pixel counts (``video.image_stats: exact``) against lerobot's own."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

H, W = 24, 32


def _frames(n: int, seed: int = 0, h: int = H, w: int = W) -> np.ndarray:
    """Smooth moving gradients plus noise, a range that grows over the episode (lerobot re-bins then)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.empty((n, h, w, 3), np.uint8)
    for t in range(n):
        base = 40 + (t * 3 + xx * 2 + yy)[..., None] * np.array([1.0, 0.7, 0.4]) + rng.normal(0, 6, (h, w, 3))
        out[t] = np.clip(base * (0.5 + t / (2 * n)), 0, 255).astype(np.uint8)
    return out


def _downsampled_pixels(frames: np.ndarray) -> np.ndarray:
    from lerobot.datasets.compute_stats import auto_downsample_height_width

    return np.concatenate(
        [auto_downsample_height_width(f.transpose(2, 0, 1)).transpose(1, 2, 0).reshape(-1, 3) for f in frames]
    )


@pytest.mark.parametrize("size", [(H, W), (480, 640)])
def test_counts_give_lerobots_one_batch_statistics_of_every_pixel(size: tuple[int, int]) -> None:
    """min/max/quantiles equal lerobot's RunningQuantileStats over all pixels at once (get_feature_stats); mean/std
    exact; count = downsampled pixels per channel, as lerobot's streaming encoder counts them."""
    from lerobot.datasets.compute_stats import RunningQuantileStats
    from so101_dataset.image_stats import PixelCounts

    frames = _frames(20, h=size[0], w=size[1])
    counts = PixelCounts()
    for f in frames:
        counts.update(f)
    got = counts.statistics()
    pixels = _downsampled_pixels(frames)
    ref = RunningQuantileStats()
    ref.update(pixels)
    want = ref.get_statistics()
    assert set(got) == set(want)
    assert {k: (v.shape, v.dtype) for k, v in got.items()} == {k: (v.shape, v.dtype) for k, v in want.items()}
    per_frame = {(H, W): H * W, (480, 640): 120 * 160}[size]  # lerobot keeps every 4th pixel of 640×480
    assert int(got["count"][0]) == len(pixels) == 20 * per_frame
    for k in ("min", "max", "q01", "q10", "q50", "q90", "q99"):
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)
    exact = pixels.astype(np.float64)
    np.testing.assert_allclose(got["mean"], exact.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(got["std"], exact.std(axis=0), rtol=1e-5)


def test_counts_are_cheaper_than_lerobots_running_histograms() -> None:
    """The per-frame cost that made lerobot's encoder thread CPU-bound: ≥ 5× less here (≈ 15× measured)."""
    from lerobot.datasets.compute_stats import RunningQuantileStats, auto_downsample_height_width
    from so101_dataset.image_stats import PixelCounts

    frames = _frames(30, h=120, w=160)
    counts, running = PixelCounts(), RunningQuantileStats()
    t0 = time.thread_time()
    for f in frames:
        counts.update(f)
    t1 = time.thread_time()
    for f in frames:
        running.update(auto_downsample_height_width(f.transpose(2, 0, 1)).transpose(1, 2, 0).reshape(-1, 3))
    t2 = time.thread_time()
    assert (t2 - t1) > 5 * (t1 - t0), (t1 - t0, t2 - t1)


def test_bad_frames_and_too_few_pixels_raise() -> None:
    from so101_dataset.image_stats import PixelCounts, count_statistics

    with pytest.raises(ValueError, match="uint8"):
        PixelCounts().update(np.zeros((4, 4, 3), np.float32))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2 pixels"):
        count_statistics(np.zeros((3, 256), np.int64))


def _shard(root: Path, image_stats: str, frames: np.ndarray) -> Path:
    from so101_dataset.config import DatasetConfig
    from so101_dataset.lerobot_v3 import ShardWriter

    base = DatasetConfig(width=W, height=H, cameras=("ego", "side"))
    cfg = replace(base, video=replace(base.video, image_stats=image_stats, encoder_threads=1))
    writer = ShardWriter(root, cfg)
    state = np.linspace(-1, 1, len(frames) * 6, dtype=np.float32).reshape(-1, 6)
    for j, f in enumerate(frames):
        writer.add({"ego": f, "side": 255 - f}, state[j], state[j] * 2, "task")
    assert writer.finish() == len(frames)
    return root


def test_exact_stats_shard_has_stock_videos_and_lerobots_stats_layout(tmp_path: Path) -> None:
    """The default writer: byte-identical MP4s to stock lerobot's streaming encoder, the same stats keys and shapes
    (min/max/count equal, mean/std within 1e-4, quantiles within 1e-3 of lerobot's running histograms; state and
    action stats identical), loaded by stock LeRobotDataset."""
    import pyarrow.parquet as pq
    from lerobot.datasets import LeRobotDataset
    from so101_dataset.config import DatasetConfig
    from so101_dataset.stream_encoder import CountingLeRobotDataset

    assert DatasetConfig().video.image_stats == "exact"
    frames = _frames(45, seed=3)
    stock = _shard(tmp_path / "stock", "lerobot", frames)
    exact = _shard(tmp_path / "exact", "exact", frames)

    def videos(root: Path) -> dict[str, str]:
        return {
            p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.glob("videos/**/*.mp4"))
        }

    assert videos(stock) == videos(exact) and len(videos(exact)) == 2
    a = json.loads((stock / "meta" / "stats.json").read_text())
    b = json.loads((exact / "meta" / "stats.json").read_text())
    assert a.keys() == b.keys() and all(a[k].keys() == b[k].keys() for k in a)
    for key in a:
        for s in a[key]:
            x, y = np.asarray(a[key][s], float), np.asarray(b[key][s], float)
            assert x.shape == y.shape, (key, s)
            if key.startswith("observation.images.") and s not in ("min", "max", "count"):
                # lerobot re-bins its running histograms as the range grows: its quantiles drift by < 0.25 level
                np.testing.assert_allclose(y, x, atol=1e-3 if s.startswith("q") else 1e-4, err_msg=f"{key} {s}")
            else:
                np.testing.assert_array_equal(y, x, err_msg=f"{key} {s}")
    ep_a = pq.read_table(next((stock / "meta" / "episodes").rglob("*.parquet")))
    ep_b = pq.read_table(next((exact / "meta" / "episodes").rglob("*.parquet")))
    assert ep_a.schema == ep_b.schema
    ds = LeRobotDataset("local/so101_sim", root=exact, video_backend="pyav")
    assert len(ds) == 45 and ds.meta.total_episodes == 1
    img = ds[44]["observation.images.ego"]
    assert tuple(img.shape) == (3, H, W)
    assert abs(float(img.mean()) - frames[44].mean() / 255) < 0.02  # decodes to the written pixels (lossy)
    ref = LeRobotDataset("local/so101_sim", root=stock, video_backend="pyav")
    assert np.array_equal(ds[10]["observation.images.side"].numpy(), ref[10]["observation.images.side"].numpy())
    assert CountingLeRobotDataset.__mro__[1] is LeRobotDataset


def test_exact_encoder_reports_a_bad_frame_as_an_error(tmp_path: Path) -> None:
    from so101_dataset.config import DatasetConfig
    from so101_dataset.lerobot_v3 import ShardWriter

    writer = ShardWriter(tmp_path / "s", DatasetConfig(width=W, height=H, cameras=("ego",)))
    writer.add({"ego": _frames(1)[0]}, np.zeros(6), np.zeros(6), "task")
    writer.ds.writer._streaming_encoder.feed_frame("observation.images.ego", np.zeros((H, W, 3), np.float32))
    with pytest.raises(RuntimeError, match="uint8"):
        writer.finish()
    writer.abort()


def test_image_stats_is_a_named_config_field() -> None:
    from so101_dataset.config import parse_dataset_config
    from so101_dataset.errors import DatasetConfigError

    assert parse_dataset_config({"video": {"image_stats": "lerobot"}}).video.image_stats == "lerobot"
    with pytest.raises(DatasetConfigError, match="image_stats"):
        parse_dataset_config({"video": {"image_stats": "sampled"}})


def test_writing_a_shard_logs_no_decoder_probe(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A shard is written, never decoded: no torchcodec probe and its warning (one per shard, 185 lines in a
    16-worker benchmark's log) from lerobot's default video backend."""
    with caplog.at_level(logging.WARNING, logger="lerobot"):
        _shard(tmp_path / "s", "exact", _frames(4))
    assert not [r for r in caplog.records if "torchcodec" in r.getMessage()]


def test_a_shard_skipping_the_needless_embedding_is_the_stock_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ShardWriter skips lerobot's per-row embed map where no feature needs it: the parquet files hold the table and
    features the stock writer (its embed map run) writes (the map's ``datasets`` cache fingerprint alone is not
    stored), and the map does run for an episode with an image stored in the parquet (an ``Image`` feature)."""
    import datasets
    import pyarrow.parquet as pq
    from lerobot.datasets import dataset_writer

    from so101_dataset import lerobot_v3

    frames = _frames(30, seed=5)
    fast = _shard(tmp_path / "fast", "exact", frames)
    monkeypatch.setattr(lerobot_v3, "embedding_only_where_needed", contextlib.nullcontext)  # lerobot's own path
    stock = _shard(tmp_path / "stock", "exact", frames)
    monkeypatch.undo()

    def parquet(root: Path) -> dict[str, Any]:
        tables = {p.relative_to(root).as_posix(): pq.read_table(p) for p in sorted(root.glob("data/**/*.parquet"))}
        hf = {k: json.loads(t.schema.metadata[b"huggingface"]) for k, t in tables.items()}
        return {k: (t.replace_schema_metadata(None), hf[k]["info"]) for k, t in tables.items()}

    got, want = parquet(fast), parquet(stock)
    assert got.keys() == want.keys() and len(got) == 1
    for key, (table, info) in got.items():
        assert table.equals(want[key][0]) and info == want[key][1]
    assert "fingerprint" in json.loads(pq.read_schema(next(stock.glob("data/**/*.parquet"))).metadata[b"huggingface"])
    stock_embed = dataset_writer.embed_images
    calls = []
    monkeypatch.setattr(dataset_writer, "embed_images", lambda ds: calls.append(ds) or stock_embed(ds))
    numbers = datasets.Dataset.from_dict({"x": [1.0, 2.0]})
    image = np.zeros((2, 2, 3), np.uint8)
    images = datasets.Dataset.from_dict({"im": [image]}, features=datasets.Features({"im": datasets.Image()}))
    before = dataset_writer.embed_images
    with lerobot_v3.embedding_only_where_needed():
        assert dataset_writer.embed_images(numbers) is numbers and not calls
        assert dataset_writer.embed_images(images)["im"][0].size == (2, 2) and calls == [images]
    assert dataset_writer.embed_images is before  # restored
