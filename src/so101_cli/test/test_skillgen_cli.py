"""``so101 skillgen generate`` input errors and the machine label of benchmark results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from so101_cli.benchmarks.results import write_result
from so101_core.seeds.format import SeedDemo, save_seed


def _seed_dir(tmp_path: Path) -> Path:
    steps = 5
    pose = np.tile([0.2, 0.0, 0.01, 1.0, 0.0, 0.0, 0.0], (steps, 1))
    demo = SeedDemo(
        t=np.arange(steps) / 30.0,
        joint_positions=np.zeros((steps, 6)),
        actions=np.zeros((steps, 6)),
        object_poses={"vial": pose, "rack": pose},
        success=True,
    )
    save_seed(demo, tmp_path / "seeds" / "seed_0.npz")
    return tmp_path / "seeds"


def test_unknown_task_variant_is_a_clear_error(tmp_path: Path) -> None:
    seeds = _seed_dir(tmp_path)
    cmd = [sys.executable, "-m", "so101_cli.main", "skillgen", "generate", "--seeds", str(seeds), "-n", "1",
           "--task", "nope", "--out", str(tmp_path / "out")]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert proc.returncode == 2, proc.stderr
    assert "task.variants.nope" in proc.stderr and "unknown task variant" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_results_carry_the_machine_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SO101_BENCH_RESULTS", str(tmp_path))
    monkeypatch.setenv("SO101_MACHINE", "device machine (test)")
    path = write_result("probe", {"x": 1})
    record = json.loads(path.read_text())
    assert record["machine"]["host"] == "device machine (test)" and record["x"] == 1
    monkeypatch.delenv("SO101_MACHINE")
    assert json.loads(write_result("probe", {}).read_text())["machine"]["host"] != "device machine (test)"
