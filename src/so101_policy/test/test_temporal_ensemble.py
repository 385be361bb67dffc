"""ACT's temporal ensemble as an execution option (``temporal_ensemble_coeff``): :func:`~so101_policy.blending.ensemble`
against a brute-force average and against LeRobot's own ``ACTTemporalEnsembler``; 0 keeps today's EMA bit for bit;
the setting reaches the policy node (its ROS parameter, the evaluation graph's argument) and the fast evaluator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from nodegraph.launch.resolve import resolve_launch
from nodegraph.testing.graph import GraphBackend
from so101_policy.admission import Admission, ChunkLimits, admit_chunk
from so101_policy.blending import Plan, blend, ensemble
from so101_policy.config import EvalConfig, PolicyNodeConfig
from so101_policy.errors import ConfigError
from so101_policy.evaluation_graph import evaluation_arguments, evaluation_description

from so101_policy import fast_eval

H = 8


def chunks(n: int, seed: int = 0) -> list[np.ndarray]:
    """``n`` random chunks (H, 6): chunk i is the prediction made at step ``i * every``."""
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(H, 6)) for _ in range(n)]


def reference(preds: list[np.ndarray], every: int, delay: int, t: int, coeff: float) -> np.ndarray:
    """Σ w_k p_k(t) / Σ w_k over the predictions for step ``t`` that arrived by ``t``, oldest first (k = 0)."""
    made = [p[t - s] for i, p in enumerate(preds) if (s := i * every) + delay <= t < s + H]
    w = np.exp(-coeff * np.arange(len(made)))
    return np.asarray(np.tensordot(w, np.asarray(made), axes=1) / w.sum())


@pytest.mark.parametrize(("every", "delay"), [(1, 0), (3, 0), (2, 1)])
@pytest.mark.parametrize("coeff", [0.01, 0.5])
def test_ensemble_averages_every_prediction_made_for_a_step(every: int, delay: int, coeff: float) -> None:
    """A new chunk every ``every`` steps, observed ``delay`` steps before it arrives (its past rows dropped)."""
    preds = chunks(12)
    plan: Plan | None = None
    for t in range(len(preds) * every):
        if t >= delay and (t - delay) % every == 0:  # chunk i, observed at step i * every, arrives
            i = (t - delay) // every
            plan = ensemble(plan, preds[i], i * every, t, H, coeff)
        if plan is None:  # nothing arrived yet
            continue
        action = plan.at(t)
        assert action is not None
        np.testing.assert_allclose(action, reference(preds, every, delay, t, coeff), rtol=1e-12, atol=1e-12)
    assert plan is not None and plan.counts.max() <= H


def test_ensemble_drops_the_past_and_takes_new_rows_as_they_are() -> None:
    old = Plan(np.zeros((8, 6)), start=0)
    assert old.counts.tolist() == [1] * 8  # a plain chunk: one prediction a row
    plan = ensemble(old, np.ones((16, 6)), chunk_start=4, now=6, horizon=8, coeff=0.5)
    w = np.exp(-0.5 * np.arange(2))
    assert plan.start == 6 and len(plan.actions) == 6 and plan.counts.tolist() == [2, 2, 1, 1, 1, 1]
    np.testing.assert_allclose(plan.actions[:2], w[1] / w.sum())  # steps 6, 7: old 0 (k = 0), new 1 (k = 1)
    np.testing.assert_allclose(plan.actions[2:], 1.0)
    assert len(ensemble(old, np.ones((8, 6)), 0, now=20, horizon=8, coeff=0.5).actions) == 0
    with pytest.raises(ValueError, match="coeff"):
        ensemble(None, np.ones((8, 6)), 0, 0, 8, coeff=0.0)


def test_our_plan_executes_what_lerobots_act_temporal_ensembler_returns() -> None:
    """LeRobot's ACTTemporalEnsembler fed the same chunks, one a step (ACT's own use, ``n_action_steps`` 1)."""
    torch = pytest.importorskip("torch")
    from lerobot.policies.act.modeling_act import ACTTemporalEnsembler

    for coeff in (0.01, 0.3):
        theirs = ACTTemporalEnsembler(coeff, H)
        plan: Plan | None = None
        for t, chunk in enumerate(chunks(3 * H, seed=1)):
            expected = theirs.update(torch.from_numpy(chunk)[None])[0].numpy()
            plan = ensemble(plan, chunk, t, t, H, coeff)
            action = plan.at(t)
            assert action is not None
            np.testing.assert_allclose(action, expected, rtol=1e-5, atol=1e-6)


LIMITS = ChunkLimits(np.full(6, -10.0), np.full(6, 10.0), 0.5, np.full(5, 10.0))


def _admit_all(preds: list[np.ndarray], coeff: float) -> list[Admission]:
    plan: Plan | None = None
    out = []
    for t, chunk in enumerate(preds):
        result = admit_chunk(plan, chunk, t, t + 1, H, 0.2, LIMITS, np.zeros(6), ensemble_coeff=coeff)
        plan = result.plan
        out.append(result)
    return out


def test_coefficient_zero_is_todays_ema_bit_for_bit_and_above_zero_the_ensemble() -> None:
    preds = chunks(6, seed=2)
    plan: Plan | None = None
    for t, (chunk, admitted) in enumerate(zip(preds, _admit_all(preds, 0.0), strict=True)):
        plan = blend(plan, chunk, t, t + 1, H, 0.2)
        assert admitted.plan is not None and np.array_equal(admitted.plan.actions, plan.actions)
    plan = None
    for t, (chunk, admitted) in enumerate(zip(preds, _admit_all(preds, 0.1), strict=True)):
        plan = ensemble(plan, chunk, t, t + 1, H, 0.1)
        assert admitted.plan is not None and np.array_equal(admitted.plan.actions, plan.actions)
    ema = _admit_all(preds, 0.0)[-1].plan
    assert ema is not None and plan is not None and not np.allclose(ema.actions, plan.actions)


def test_a_negative_coefficient_is_refused_naming_the_field() -> None:
    assert EvalConfig().temporal_ensemble_coeff == PolicyNodeConfig().temporal_ensemble_coeff == 0.0  # off
    with pytest.raises(ConfigError, match=r"eval\.temporal_ensemble_coeff"):
        EvalConfig(temporal_ensemble_coeff=-0.01)
    with pytest.raises(ConfigError, match=r"policy\.temporal_ensemble_coeff"):
        PolicyNodeConfig(temporal_ensemble_coeff=-1.0)


def test_the_evaluation_graph_gives_the_policy_node_the_coefficient() -> None:
    config = EvalConfig(temporal_ensemble_coeff=0.01)
    arguments = evaluation_arguments(
        config, cameras=("top",), policy_cameras=("top",), width=32, height=24, server_port=6001, token="t0"
    )
    policy = resolve_launch(evaluation_description(("--replay", "x")), arguments).nodes[2]
    assert policy.parameters[0]["temporal_ensemble_coeff"] == 0.01
    default = resolve_launch(evaluation_description(), ["checkpoint:=runs/act"]).nodes[2]
    assert default.parameters[0]["temporal_ensemble_coeff"] == 0.0


def test_the_policy_node_declares_the_coefficient(own_graph_backend: GraphBackend) -> None:
    from so101_policy.nodes.policy_node import PolicyParams

    node = own_graph_backend.node("policy", parameter_overrides={"temporal_ensemble_coeff": 0.01})
    try:
        assert PolicyParams.declare(node).temporal_ensemble_coeff == 0.01
        assert node.get_parameter("temporal_ensemble_coeff") == 0.01
    finally:
        node.shutdown()


class Stay:
    """A chunk holding the observed state, the gripper closing by 1° a row (a step-varying target to average)."""

    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]:
        return {}

    def get_action(self, obs: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict[str, Any], dict]:
        arm = np.repeat(obs["state"]["single_arm"], H, axis=1)
        grip = np.repeat(obs["state"]["gripper"], H, axis=1) - np.arange(H)[:, None]
        return {"single_arm": arm, "gripper": grip}, {}


def test_the_fast_evaluator_executes_the_ensemble(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[float, Admission]] = []

    def spy(*args: Any, **kwargs: Any) -> Admission:
        result = admit_chunk(*args, **kwargs)
        seen.append((kwargs["ensemble_coeff"], result))
        return result

    monkeypatch.setattr(fast_eval, "admit_chunk", spy)
    config = EvalConfig(
        episodes=1, episode_s=0.5, horizon=H, replan_steps=2, device="cpu", temporal_ensemble_coeff=0.01
    )
    fast_eval.run_fast_evaluation(Stay(), tmp_path, config, ("top",), (32, 24), envs=1)
    (row,) = [json.loads(line) for line in (tmp_path / "fast_episodes.jsonl").read_text().splitlines()]
    assert row["steps"] == 15 and row["queries"] == 8 and row["rejected_chunks"] == row["held_steps"] == 0
    assert len(seen) == 8 and {coeff for coeff, _ in seen} == {0.01}
    assert max(int(r.plan.counts.max()) for _, r in seen if r.plan is not None) == H // 2  # 4 chunks a step
