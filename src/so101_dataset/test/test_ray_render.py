"""Rendering on Ray (a local Ray instance, two actors): the same units as rendering here (states, DR draw,
pixels up to codec noise), every demo exactly once, and a render actor killed at the start of its first demo
is replaced without losing or doubling a unit."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from dataset_fixtures import write_demos

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_ray_instance")]  # conftest.py at the root


def _frames(unit: Path) -> dict[str, np.ndarray]:
    from so101_dataset.bags import decode_frames

    videos = sorted((unit / "lerobot" / "videos").glob("*/*/*.mp4"))
    return {v.parts[-3]: np.stack(list(decode_frames(v))) for v in videos}


def test_ray_actors_render_the_same_units_and_survive_a_killed_actor(tmp_path: Path) -> None:
    from so101_dataset.config import load_dataset_config
    from so101_dataset.episodes import complete_units, render_episodes
    from so101_dataset.ray_render import render_on_ray

    demos = tmp_path / "demos"
    write_demos(demos, 4, steps=8)
    cfg = load_dataset_config().with_overrides(width=32, height=24)
    here = render_episodes(demos, tmp_path / "here", cfg, workers=1)
    assert here["rendered"] == 4

    root = tmp_path / "ray" / "episodes"
    root.mkdir(parents=True)
    killed: list[int] = []
    results = []

    def kill_one(pids: list[int]) -> None:
        assert len(pids) == 2 and os.getpid() not in pids
        killed.append(pids[0])
        os.kill(pids[0], signal.SIGKILL)

    todo = [(i, p) for i, p in enumerate(sorted(demos.glob("demo_*.npz")))]
    restarts = render_on_ray(todo, cfg, root, demos, results.append, workers=2, address="local", on_start=kill_one)
    assert killed and restarts >= 1
    assert sorted(r.index for r in results) == [0, 1, 2, 3] and all(r.ok for r in results)
    units = complete_units(root)
    assert sorted(units) == [0, 1, 2, 3]
    local = complete_units(tmp_path / "here" / "episodes")
    for i, unit in units.items():
        here_meta, ray_meta = (json.loads((u / "episode.json").read_text()) for u in (local[i], unit))
        assert ray_meta["visual_dr"] == here_meta["visual_dr"] and ray_meta["provenance"] == here_meta["provenance"]
        with np.load(local[i] / "replay.npz") as a, np.load(unit / "replay.npz") as b:
            assert a.files == b.files and all(np.array_equal(a[k], b[k]) for k in a.files)
        want, got = _frames(local[i]), _frames(unit)
        assert want.keys() == got.keys() and len(want) == len(cfg.cameras)
        for cam in want:
            # same demo, same DR draw, same pixels up to codec noise: another demo differs by 13-35 on average;
            # one CI run in many saw a difference between processes whose source is not found (render.py)
            assert want[cam].shape == got[cam].shape, (i, cam)
            diff = np.abs(want[cam].astype(np.int16) - got[cam])
            assert diff.mean() < 1.0, (i, cam, float(diff.mean()), int(diff.max()))


def test_render_episodes_on_ray_resumes_like_local(tmp_path: Path) -> None:
    from so101_dataset.config import load_dataset_config
    from so101_dataset.episodes import render_episodes

    demos = tmp_path / "demos"
    write_demos(demos, 3, steps=6)
    cfg = load_dataset_config().with_overrides(width=32, height=24)
    first = render_episodes(demos, tmp_path / "out", cfg, workers=2, max_episodes=2, address="local")
    assert first["rendered"] == 2 and first["rendered_this_run"] == 2
    second = render_episodes(demos, tmp_path / "out", cfg, workers=2, address="local")
    assert second["rendered"] == 3 and second["rendered_this_run"] == 1  # only the missing one
