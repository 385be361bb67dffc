"""The tiled renderer against stock ``mujoco.Renderer``, and the resampling to the dataset rate."""

from __future__ import annotations

import numpy as np


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


def test_the_standing_vials_of_an_episode_are_drawn() -> None:
    """A demo records its standing vials' poses (pre-filled slots): the renderer draws them where they stood; a
    demo without them (from before them) shows none, and an object the scene lacks is a clear error."""
    import pytest
    from so101_dataset.errors import RenderError
    from so101_dataset.render import EpisodeRenderer, Replay

    r = EpisodeRenderer(160, 120, ("side", "top"))
    try:
        tw = r.twin
        seed = next(s for s in range(100) if len(tw.reset(s).prefilled) == 2)
        r.prepare(seed)
        q = tw.joint_positions()[None]
        objs = {k: np.r_[p.position, p.quaternion][None] for k, p in tw.object_poses().items()}
        assert objs["standing_vial_1"][0, 2] > 0.05  # standing in the rack, not parked

        def frame(objects: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {c: v.copy() for c, v in next(iter(r.frames(Replay(np.zeros(1), q, q, objects)))).items()}

        shown = frame(objs)
        without = frame({k: v for k, v in objs.items() if not k.startswith("standing_vial_")})
        for cam in ("side", "top"):
            changed = np.any(shown[cam] != without[cam], axis=-1).sum()
            assert changed >= 16, (cam, changed)  # two vials: a few pixels each at 160x120 at least
        with pytest.raises(RenderError, match="beaker"):
            frame({**objs, "beaker": objs["vial"]})
    finally:
        r.close()


def test_every_readback_gives_the_same_pixels() -> None:
    """MuJoCo's GL_RGB readback and the 4-channel ones (resolve + glReadPixels, RGBA or BGRA) agree exactly; an
    unknown readback is refused by name."""
    import pytest
    from so101_dataset.errors import RenderError
    from so101_dataset.render import READBACKS, EpisodeRenderer, Replay, TiledRenderer

    r = EpisodeRenderer(80, 60, ("ego", "side", "top"), frames_per_pass=3)
    try:
        r.prepare(5)
        tw = r.twin
        q = np.tile(tw.joint_positions(), (3, 1))
        q[:, 0] += [0.0, 0.3, 0.6]
        objs = {k: np.tile(np.r_[p.position, p.quaternion], (3, 1)) for k, p in tw.object_poses().items()}
        rep = Replay(np.arange(3) / 30.0, q, q, objs)
        got = {}
        for readback in READBACKS:
            r.renderer.readback = readback
            got[readback] = np.stack([np.concatenate(list(f.values()), axis=1) for f in r.frames(rep)])
        assert got["rgb"].std() > 10  # a scene, not a blank buffer
        assert not np.array_equal(got["rgb"][0], got["rgb"][2])  # the arm moved between the frames
        for readback in READBACKS[1:]:
            np.testing.assert_array_equal(got[readback], got["rgb"], err_msg=readback)
        with pytest.raises(RenderError, match="readback must be one of"):
            TiledRenderer(tw.model, 8, 8, [0], readback="argb")
    finally:
        r.close()
