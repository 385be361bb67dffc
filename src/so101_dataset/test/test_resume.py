"""SIGKILL at random points of ``build_dataset``, then a rerun: exactly the requested episodes, once each."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from dataset_fixtures import write_demos

SCRIPT = """
import sys
from pathlib import Path
from so101_dataset.build import build_dataset
from so101_dataset.config import load_dataset_config
cfg = load_dataset_config().with_overrides(width=32, height=24)
def progress(stage, done, total):
    print(stage, done, total, flush=True)
r = build_dataset(Path(sys.argv[1]), Path(sys.argv[2]), cfg, workers=int(sys.argv[3]), progress=progress)
print("DONE", r.episodes, r.frames, flush=True)
"""


def _run(demos: Path, out: Path, workers: int, kill_after: int | None, delay: float) -> list[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(demos), str(out), str(workers)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            lines.append(line.strip())
            if kill_after is not None and len(lines) >= kill_after:
                time.sleep(delay)
                os.killpg(proc.pid, signal.SIGKILL)
                break
    finally:
        proc.wait(timeout=300)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return lines


@pytest.mark.slow
def test_sigkill_at_random_points_then_rerun_gives_exact_episodes(tmp_path: Path) -> None:
    from lerobot.datasets import LeRobotDataset
    from so101_dataset.lerobot_v21 import check_gr00t_layout

    demos, out = tmp_path / "demos", tmp_path / "out"
    write_demos(demos, 4, steps=10)
    rng = np.random.default_rng(int(time.time()) % 1000)
    # a fresh run prints render 0..4, export 0..2, bags 1..4, report 1, DONE: kill the first during
    # rendering (after line 2..4), the resumed second one anywhere in what is left of its stages
    first = int(rng.integers(2, 5))
    lines = _run(demos, out, 2, first, float(rng.uniform(0.0, 0.4)))
    assert lines and not lines[-1].startswith("DONE"), lines
    lines = _run(demos, out, 1, int(rng.integers(1, 9)), float(rng.uniform(0.0, 0.4)))
    lines = _run(demos, out, 1, None, 0.0)
    assert lines[-1] == "DONE 4 40", lines
    units = sorted(p.name for p in (out / "episodes").glob("episode_*"))
    assert units == [f"episode_{i:06d}" for i in range(4)]
    assert not list((out / "episodes").glob(".tmp/*")) and not list(out.glob("*.tmp")) and not list(out.glob("*.old"))
    ds = LeRobotDataset("local/so101_sim", root=out / "lerobot_v3", video_backend="pyav")
    assert ds.meta.total_episodes == 4 and len(ds) == 40
    assert sorted({int(e) for e in ds.hf_dataset["episode_index"]}) == [0, 1, 2, 3]
    assert check_gr00t_layout(out / "lerobot_v21")["frames"] == 40
    assert sorted(p.name for p in (out / "bags").iterdir() if p.name != ".tmp") == units
    assert json.loads((out / "build.json").read_text())["episodes"] == 4


def test_on_bad_demo_stop_names_the_file_and_keeps_finished_units(tmp_path: Path) -> None:
    from so101_dataset.episodes import render_episodes
    from so101_dataset.errors import DemoFileError

    demos = tmp_path / "demos"
    write_demos(demos, 2, steps=6)
    (demos / "demo_000001.npz").write_bytes(b"\x00" * 10)
    from so101_dataset.config import load_dataset_config

    cfg = load_dataset_config().with_overrides(width=32, height=24, on_bad_demo="stop")
    with pytest.raises(DemoFileError, match=r"demo_000001\.npz"):
        render_episodes(demos, tmp_path / "out", cfg)
    assert (tmp_path / "out" / "episodes" / "episode_000000" / "episode.json").is_file()
    failures = json.loads((tmp_path / "out" / "episodes" / "failures.json").read_text())
    assert failures["1"]["reason"] == "bad_demo_file"


def test_rerun_with_other_render_settings_is_refused(tmp_path: Path) -> None:
    from so101_dataset.config import load_dataset_config
    from so101_dataset.episodes import render_episodes
    from so101_dataset.errors import DatasetError

    demos = tmp_path / "demos"
    write_demos(demos, 1, steps=4)
    cfg = load_dataset_config().with_overrides(width=32, height=24)
    assert render_episodes(demos, tmp_path / "out", cfg)["rendered"] == 1
    with pytest.raises(DatasetError, match=r"width.*new output directory"):
        render_episodes(demos, tmp_path / "out", cfg.with_overrides(width=64, height=48))
    assert render_episodes(demos, tmp_path / "out", cfg)["rendered_this_run"] == 0  # same settings: resumes


def test_missing_demo_directory_and_bad_config_are_clear(tmp_path: Path) -> None:
    from so101_dataset.config import load_dataset_config
    from so101_dataset.episodes import find_demos
    from so101_dataset.errors import DatasetConfigError, DemoFileError

    with pytest.raises(DemoFileError, match="no such demo directory"):
        find_demos(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DemoFileError, match="no demo files"):
        find_demos(tmp_path / "empty")
    bad = tmp_path / "dataset.yaml"
    bad.write_text("fps: 30\nvideo: {crf: 99}\n")
    with pytest.raises(DatasetConfigError, match=r"dataset\.video\.crf"):
        load_dataset_config(bad)
    bad.write_text("widht: 640\n")
    with pytest.raises(DatasetConfigError, match=r"dataset\.widht"):
        load_dataset_config(bad)
    with pytest.raises(DatasetConfigError, match="even"):
        load_dataset_config().with_overrides(width=65)
