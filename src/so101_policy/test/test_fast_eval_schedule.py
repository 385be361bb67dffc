"""Each fast-evaluation environment asks the policy on its own schedule, as its policy node would: every replan
steps, or every step while its plan is empty (every chunk refused). An environment holding after refusals does not
make the others replan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from so101_policy.config import EvalConfig
from so101_policy.fast_eval import run_fast_evaluation

HORIZON, REPLAN, SECONDS = 16, 8, 1.0


class RefuseFirstRow:
    """Row 0 asks for a move 90° away on every joint (refused as a gross excursion), the other rows to stay."""

    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]:
        return {}

    def get_action(self, obs: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict[str, Any], dict]:
        arm = np.repeat(obs["state"]["single_arm"], HORIZON, axis=1)
        grip = np.repeat(obs["state"]["gripper"], HORIZON, axis=1)
        arm[0] += 90.0
        return {"single_arm": arm, "gripper": grip}, {}


def test_a_holding_environment_does_not_make_the_others_replan(tmp_path: Path) -> None:
    config = EvalConfig(episodes=2, episode_s=SECONDS, horizon=HORIZON, replan_steps=REPLAN, device="cpu")
    run_fast_evaluation(RefuseFirstRow(), tmp_path, config, ("top",), (32, 24), envs=2)
    rows = [json.loads(line) for line in (tmp_path / "fast_episodes.jsonl").read_text().splitlines()]
    steps = round(SECONDS * 30)
    refused, steady = rows
    assert refused["steps"] == steady["steps"] == steps
    # refused every time: no plan, so it asks at every step and holds every step
    assert refused["queries"] == refused["rejected_chunks"] == refused["held_steps"] == steps
    # the other asks every REPLAN steps only, and never holds
    assert steady["queries"] == -(-steps // REPLAN) and steady["rejected_chunks"] == steady["held_steps"] == 0


def test_the_results_say_where_the_time_went(tmp_path: Path) -> None:
    config = EvalConfig(episodes=2, episode_s=SECONDS, horizon=HORIZON, replan_steps=REPLAN, device="cpu")
    result = run_fast_evaluation(RefuseFirstRow(), tmp_path, config, ("top",), (32, 24), envs=2)
    summary = json.loads(result.results_json.read_text())
    phases = summary["phases"]
    steps = round(SECONDS * 30)
    assert phases["step"]["calls"] == steps  # both episodes run side by side, one vector step per control step
    assert phases["policy"]["calls"] == phases["render"]["calls"] == steps  # row 0 asks at every step
    assert phases["start"]["calls"] == phases["close"]["calls"] == 1 and phases["reset"]["calls"] == 1
    assert phases["outcome"]["calls"] == 1  # both end at the same step
    spent = sum(v["s"] for k, v in phases.items() if k != "other_s")
    assert all(v["s"] >= 0 for k, v in phases.items() if k != "other_s")
    assert abs(spent + phases["other_s"] - summary["wall_s"]) < 0.01 and phases["other_s"] >= -0.01
    warm_s = summary["wall_s"] - phases["start"]["s"] - phases["close"]["s"]
    assert summary["cold_start_s"] == phases["start"]["s"] > 0
    assert summary["episodes_per_min_warm"] == pytest.approx(60.0 * 2 / warm_s, rel=1e-3)
    assert summary["episodes_per_min_warm"] > summary["episodes_per_min"]


def test_no_episode_starts_after_the_deadline_and_the_results_say_how_many_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deadline passed while the first wave runs: those two episodes finish, none of the other three starts;
    the results count the two (the first seeds) against the five planned. Without one, all five run."""
    import time
    import types

    from so101_policy import fast_eval

    clock = {"now": 0.0}

    class LateAfterFirstChunk(RefuseFirstRow):
        def get_action(self, obs: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict[str, Any], dict]:
            clock["now"] = 10.0  # the deadline (5.0) passes while the first episodes run
            chunk, info = super().get_action(obs, options)
            chunk["single_arm"][0] -= 90.0  # no refusals here
            return chunk, info

    fake_time = types.SimpleNamespace(perf_counter=time.perf_counter, monotonic=lambda: clock["now"])
    monkeypatch.setattr(fast_eval, "time", fake_time)
    config = EvalConfig(episodes=5, episode_s=SECONDS, horizon=HORIZON, replan_steps=REPLAN, device="cpu")
    cut = run_fast_evaluation(LateAfterFirstChunk(), tmp_path / "cut", config, ("top",), (32, 24), envs=2, deadline=5.0)
    summary = json.loads(cut.results_json.read_text())
    rows = [json.loads(line) for line in (tmp_path / "cut" / "fast_episodes.jsonl").read_text().splitlines()]
    assert (cut.episodes, summary["episodes"], summary["episodes_planned"]) == (2, 2, 5)
    assert [r["index"] for r in rows] == [0, 1] and all(r["steps"] == round(SECONDS * 30) for r in rows)
    clock["now"] = 0.0
    whole = run_fast_evaluation(LateAfterFirstChunk(), tmp_path / "whole", config, ("top",), (32, 24), envs=2)
    assert whole.episodes == 5
    assert json.loads(whole.results_json.read_text())["episodes_planned"] == 5
