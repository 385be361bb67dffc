"""``so101 eval --time-limit``: a sliced job's evaluation starts no episode after its limit and says how many ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.mark.slow
def test_eval_fast_starts_no_episode_after_its_time_limit(tmp_path: Path) -> None:
    from so101_cli.main import app
    from so101_policy.testing.checkpoint import tiny_act_checkpoint
    from typer.testing import CliRunner

    checkpoint = tiny_act_checkpoint(tmp_path)
    args = ["eval", "--fast", "--checkpoint", str(checkpoint), "-n", "3", "--envs", "1", "--device", "cpu"]
    args += ["--set", "episode_s=0.2"]
    for limit, ran in (("0", 0), ("600", 3)):  # 0: the limit has passed once the policy is loaded
        out = tmp_path / f"eval_{limit}"
        result = CliRunner().invoke(app, [*args, "--out", str(out), "--time-limit", limit])
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "fast_results.json").read_text())
        assert (summary["episodes"], summary["episodes_planned"]) == (ran, 3), limit
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "bad"), "--time-limit", "-1"])
    assert result.exit_code == 2
