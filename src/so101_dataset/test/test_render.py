"""The tiled renderer against stock ``mujoco.Renderer``, and the resampling to the dataset rate."""

from __future__ import annotations

import numpy as np
import pytest


def test_resample_takes_the_latest_sample_at_or_before_each_frame() -> None:
    from so101_dataset.render import resample

    t = np.arange(12) / 60.0  # 60 Hz recording → 30 fps dataset
    q = np.arange(12, dtype=float)[:, None] * np.ones((1, 6))
    rep = resample(t, q, q + 1, {"vial": np.tile(np.arange(12.0)[:, None], (1, 7))}, 60.0, 30)
    assert rep.frames == 6
    np.testing.assert_allclose(rep.t, np.arange(6) / 30.0)
    np.testing.assert_array_equal(rep.q[:, 0], [0, 2, 4, 6, 8, 10])
    np.testing.assert_array_equal(rep.action[:, 0], [1, 3, 5, 7, 9, 11])
    np.testing.assert_array_equal(rep.objects["vial"][:, 0], [0, 2, 4, 6, 8, 10])
    same = resample(t, q, q, {}, 60.0, 60)
    assert same.frames == 12


def test_tiled_pass_matches_stock_renderer_per_camera() -> None:
    import mujoco
    from so101_dataset.render import EpisodeRenderer, Replay

    r = EpisodeRenderer(48, 32, ("ego", "side", "top"), frames_per_pass=2)
    try:
        r.prepare(3)
        tw = r.twin
        q = np.tile(tw.joint_positions(), (2, 1))
        q[1, 0] += 0.4
        objs = {k: np.tile(np.r_[p.position, p.quaternion], (2, 1)) for k, p in tw.object_poses().items()}
        frames = [{c: v.copy() for c, v in f.items()} for f in r.frames(Replay(np.arange(2) / 30.0, q, q, objs))]
        assert r.renderer.times.frames == 2
        tw.data.qpos[tw.index.qpos_adr] = q[1]
        mujoco.mj_forward(tw.model, tw.data)
        for cam in ("ego", "side", "top"):
            stock = tw.render(cam, width=48, height=32)
            assert isinstance(stock, np.ndarray)
            differ = np.any(stock != frames[1][cam], axis=-1).mean()
            assert differ < 0.01, (cam, differ)  # the stock head light lags one camera behind
            assert not np.array_equal(frames[0][cam], frames[1][cam]) or cam == "top"
    finally:
        r.close()


def _sweep(readback: str, cameras: tuple[str, ...], frames_per_pass: int, n: int = 5) -> list[dict[str, np.ndarray]]:
    """``n`` frames (64×48) of the arm turning, rendered with the given readback and tiling."""
    from so101_dataset.render import EpisodeRenderer, Replay

    r = EpisodeRenderer(64, 48, cameras, frames_per_pass=frames_per_pass, readback=readback)
    try:
        r.prepare(3)
        tw = r.twin
        q = np.tile(tw.joint_positions(), (n, 1))
        q[:, 0] += np.linspace(0.0, 0.5, n)
        objs = {k: np.tile(np.r_[p.position, p.quaternion], (n, 1)) for k, p in tw.object_poses().items()}
        out = [{c: v.copy() for c, v in f.items()} for f in r.frames(Replay(np.arange(n) / 30.0, q, q, objs))]
        assert r.renderer.pending == 0
        return out
    finally:
        r.close()


CAMS = ("ego", "side", "top")


@pytest.mark.parametrize("readback", ["pbo", "pbo_bgra"])
def test_pbo_readback_is_bit_identical_to_sync_readback(readback: str) -> None:
    sync = _sweep("sync", CAMS, 2)
    pbo = _sweep(readback, CAMS, 2)  # 5 frames in passes of 2, 2, 1: two passes in flight, a short last one
    assert len(sync) == len(pbo) == 5
    for a, b in zip(sync, pbo, strict=True):
        for cam in CAMS:
            assert a[cam].shape == (48, 64, 3) and a[cam].dtype == np.uint8
            np.testing.assert_array_equal(a[cam], b[cam])
    assert not np.array_equal(sync[0]["ego"], sync[4]["ego"])  # the frames do change


def test_switching_readback_mid_run_keeps_the_pixels_and_rejects_bad_use() -> None:
    from so101_dataset.errors import RenderError
    from so101_dataset.render import EpisodeRenderer, Replay

    r = EpisodeRenderer(32, 24, CAMS, frames_per_pass=2, readback="pbo")
    try:
        r.prepare(5)
        tw = r.twin
        q = np.tile(tw.joint_positions(), (3, 1))
        q[:, 1] += np.linspace(0.0, 0.3, 3)
        rep = Replay(np.arange(3) / 30.0, q, q, {})
        runs = []
        for mode in ("pbo", "sync", "pbo_bgra", "pbo"):
            r.renderer.set_readback(mode)
            runs.append([f["side"].copy() for f in r.frames(rep)])
        for other in runs[1:]:
            assert all(np.array_equal(a, b) for a, b in zip(runs[0], other, strict=True))
        with pytest.raises(RenderError, match="readback must be"):
            r.renderer.set_readback("fast")
        with pytest.raises(RenderError, match="no pass pending"):
            r.renderer.collect()
        with pytest.raises(RenderError, match="count must be"):
            r.renderer.submit(tw.data, lambda i: None, 3)
    finally:
        r.close()


def test_tiled_viewports_match_each_camera_rendered_alone() -> None:
    """Three cameras × two frames as viewports of one buffer vs one camera, one frame per buffer.

    Not bit-identical on Mesa: the viewport offset enters the float viewport transform, so a fragment
    centre lying on a triangle edge can fall to the other side. Bound: a few edge pixels per image
    (measured 0-2 of 3,072 at 64×48), never a shifted or swapped image."""
    tiled = _sweep("pbo", CAMS, 2)
    for cam in CAMS:
        alone = _sweep("sync", (cam,), 1)
        for a, b in zip(tiled, alone, strict=True):
            differ = np.any(a[cam] != b[cam], axis=-1)
            assert differ.mean() <= 0.005, (cam, differ.mean())
            assert np.abs(a[cam].astype(int) - b[cam].astype(int)).mean() < 0.5, cam
    for other in ("side", "top"):  # each viewport holds its own camera
        assert np.any(tiled[0]["ego"] != tiled[0][other], axis=-1).mean() > 0.2


def test_encoder_threads_share_the_cores_among_workers_and_cameras() -> None:
    from dataclasses import replace

    from so101_dataset.config import load_dataset_config
    from so101_dataset.episodes import render_fingerprint, share_encoder_threads

    cfg = load_dataset_config()
    assert cfg.video.encoder_threads == 0 and len(cfg.cameras) == 3
    assert share_encoder_threads(cfg, 16, cores=16).video.encoder_threads == 1  # not 16 × 3 × 24 threads
    assert share_encoder_threads(cfg, 1, cores=16).video.encoder_threads == 5
    assert share_encoder_threads(cfg, 4, cores=2).video.encoder_threads == 1
    fixed = replace(cfg, video=replace(cfg.video, encoder_threads=3))
    assert share_encoder_threads(fixed, 16, cores=16).video.encoder_threads == 3  # an explicit value stays
    # the readback does not change pixels, so an output directory may be resumed with the other one
    other = replace(cfg, render=replace(cfg.render, readback="sync"))
    assert render_fingerprint(other) == render_fingerprint(cfg)
    assert render_fingerprint(replace(cfg, render=replace(cfg.render, frames_per_pass=1))) != render_fingerprint(cfg)


def test_a_bad_readback_in_the_config_names_the_field(tmp_path) -> None:
    from so101_dataset.config import load_dataset_config
    from so101_dataset.errors import DatasetConfigError

    path = tmp_path / "dataset.yaml"
    path.write_text("render:\n  readback: fast\n")
    with pytest.raises(DatasetConfigError, match="readback"):
        load_dataset_config(path)


def test_the_written_episode_is_the_same_with_either_readback(tmp_path) -> None:
    """One demo rendered into a v3.0 shard through lerobot with ``sync`` and with ``pbo``: the same
    features and shapes in ``info.json``, the same rows, the same decoded video frames."""
    import json
    from dataclasses import replace

    import pandas as pd
    from dataset_fixtures import write_demos
    from so101_dataset.bags import decode_frames
    from so101_dataset.config import load_dataset_config
    from so101_dataset.episodes import UnitRenderer

    demos = tmp_path / "demos"
    (path,) = write_demos(demos, 1, steps=9)
    base = load_dataset_config().with_overrides(width=48, height=32)
    shards = {}
    for mode in ("sync", "pbo"):
        cfg = replace(base, render=replace(base.render, readback=mode, frames_per_pass=4))
        cfg = replace(cfg, video=replace(cfg.video, encoder_threads=1))
        worker = UnitRenderer(cfg)
        try:
            res = worker.render_unit(0, path, tmp_path / mode, demos)
        finally:
            worker.close()
        assert res.ok, res.detail
        shards[mode] = tmp_path / mode / "episode_000000" / "lerobot"
    info = {m: json.loads((s / "meta" / "info.json").read_text()) for m, s in shards.items()}
    assert info["sync"]["features"] == info["pbo"]["features"]
    assert info["pbo"]["features"]["observation.images.top"]["shape"] == [32, 48, 3]
    assert info["sync"]["total_frames"] == info["pbo"]["total_frames"] == 9
    rows = {m: pd.read_parquet(next((s / "data").glob("chunk-*/file-*.parquet"))) for m, s in shards.items()}
    pd.testing.assert_frame_equal(rows["sync"], rows["pbo"])
    for cam in base.cameras:
        key = f"observation.images.{cam}"
        videos = [next((s / "videos" / key).glob("chunk-*/file-*.mp4")) for s in shards.values()]
        a, b = (np.stack(list(decode_frames(v))) for v in videos)
        assert a.shape == (9, 32, 48, 3)
        np.testing.assert_array_equal(a, b)  # same pixels in, same deterministic encoder → same frames out


def test_pbo_resolves_a_multisampled_buffer_like_mjr_readpixels() -> None:
    """With MSAA on (``offsamples`` 4; the twin's scene turns it off) both readbacks resolve the same way."""
    import mujoco
    from so101_dataset.render import TiledRenderer

    xml = """<mujoco><visual><quality offsamples="4"/></visual><worldbody><light pos="0 0 2"/>
      <geom type="plane" size="1 1 .1" rgba=".3 .5 .3 1"/><geom type="box" size=".1 .2 .1" pos="0 0 .1" euler="0 0 30"/>
      <camera name="a" pos="0 -1 .6" xyaxes="1 0 0 0 .5 1"/><camera name="b" pos="1 0 .6" xyaxes="0 1 0 -.5 0 1"/>
      </worldbody></mujoco>"""
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    out = {}
    for mode in ("sync", "pbo"):
        r = TiledRenderer(model, 40, 30, [0, 1], frames_per_pass=1, readback=mode)
        try:
            assert r._ctx.offSamples == 4
            out[mode] = r.render(data, lambda i: None, 1).copy()
        finally:
            r.close()
    assert out["sync"].shape == (1, 30, 80, 3)
    np.testing.assert_array_equal(out["sync"], out["pbo"])
    edge = out["sync"][0].astype(int)
    assert len(np.unique(edge.reshape(-1, 3), axis=0)) > 20  # antialiased edges: blended colours, not a blank
