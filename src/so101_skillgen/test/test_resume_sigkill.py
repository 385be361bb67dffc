"""Generation killed with SIGKILL at random moments, then resumed: exactly N demos, none duplicated or truncated,
the same demos (and failure records) as an uninterrupted run with the same random seed."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from nodegraph.testing import wait_until
from so101_core.seeds.format import load_seed, save_seed
from so101_core.seeds.from_rollout import scripted_seeds
from so101_core.sim.twin import Twin
from so101_skillgen.config import load_skillgen_config
from so101_skillgen.generation import generate

N = 4
RUN = (
    "import sys; from so101_skillgen.config import load_skillgen_config; "
    "from so101_skillgen.generation import generate; "
    f"generate(sys.argv[1], sys.argv[2], load_skillgen_config(), num_demos={N})"
)


@pytest.fixture(scope="module")
def seed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seeds")
    for i, s in enumerate(scripted_seeds(Twin(), list(range(300, 308)))[:4]):
        save_seed(s, root / f"seed_{i}.npz")
    return root


def _progress(out: Path) -> int:
    try:
        return int(json.loads((out / "progress.json").read_text())["next_attempt"])
    except (OSError, ValueError, KeyError):
        return -1


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_equals_the_uninterrupted_run(seed_dir: Path, tmp_path: Path) -> None:
    ref = tmp_path / "reference"
    summary = generate(seed_dir, ref, load_skillgen_config(), num_demos=N)
    assert summary.complete
    out = tmp_path / "killed"
    rng = random.Random(7)
    kills = 0
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-c", RUN, str(seed_dir), str(out)], env={**os.environ})
        start = _progress(out)
        # this run's first commit: the kill lands mid-generation
        wait_until(lambda s=start, p=proc: _progress(out) != s or p.poll() is not None, 120.0, "a first commit")
        time.sleep(rng.uniform(0.0, 0.6))  # then anywhere: inside an attempt, while writing a demo, ...
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        if len(list(out.glob("demo_*.npz"))) >= N:
            break
    assert kills >= 2
    final = generate(seed_dir, out, load_skillgen_config(), num_demos=N)  # finish (or confirm) in-process
    assert final.complete and final.kept == N
    got, want = sorted(out.glob("demo_*.npz")), sorted(ref.glob("demo_*.npz"))
    assert [p.name for p in got] == [p.name for p in want]
    assert not list(out.glob("**/*.tmp*"))
    for a, b in zip(got, want, strict=True):
        da, db = load_seed(a), load_seed(b)  # loads: not truncated
        np.testing.assert_array_equal(da.actions, db.actions)
        np.testing.assert_array_equal(da.joint_positions, db.joint_positions)
        assert da.extra["attempt"] == db.extra["attempt"] and da.seed == db.seed
    fa = json.loads((out / "failures.json").read_text()) if (out / "failures.json").exists() else []
    fb = json.loads((ref / "failures.json").read_text()) if (ref / "failures.json").exists() else []
    assert [f["attempt"] for f in fa] == [f["attempt"] for f in fb]  # no duplicate, none lost
    traj = [sorted(p.name for p in (d / "failed").glob("*.npz")) for d in (out, ref)]
    assert traj[0] == traj[1]  # every failed attempt's trajectory, once
    assert final.attempted == summary.attempted
