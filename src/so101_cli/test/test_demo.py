"""The README's main job, small: ``so101 demo`` records scripted seeds in the twin and multiplies them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nodegraph.bag import info
from so101_core.seeds import load_seeds


def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "so101_cli.main", "demo", "--seeds", "2", "--demos", "3", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seeds = load_seeds(out / "seeds")
    assert len(seeds) == 2 and all(s.success and s.source == "scripted" for s in seeds)
    generated = load_seeds(out / "skillgen")
    assert len(generated) == 3 and all(g.source == "skillgen" for g in generated)
    bag = info(out / "seeds" / "seed_000")
    assert bag.topic("/joint_states").message_count > 100
    assert "Topic: /joint_commands" in done.stdout
