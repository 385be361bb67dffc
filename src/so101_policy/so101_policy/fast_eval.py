"""``so101 eval --fast``: the evaluation's episodes in N twin environments at once, the policy batched.

The same episodes as the graph evaluation (:mod:`.evaluate`): seeds ``seed .. seed + episodes - 1`` (or
``scene_seeds``), the same twin, DR profile, command filter and success rules (:class:`~.sim_env.VialRackEnv`,
one process per environment), and chunks executed as the policy node executes them (``horizon``, a new chunk every
``replan_every`` steps, admitted, clamped and EMA-blended by :func:`~.admission.admit_chunk` with policy.yaml's
limits; a hold where no action is planned). The graph
evaluation stays the figure of record for deployment; this one is for development (a sweep scores its runs
here). What differs, by construction: inference takes no sim time here (in the graph the chunk is used from
the step its reply arrives), and the policy sees the images rendered after the last step (in the graph: the
newest frame of the 30 Hz camera stream).

Episodes run in waves of ``envs``: every environment of a wave starts together, so all share one control step
and the policy answers all of them in one batch. Writes ``fast_results.json`` (the same keys as the graph
evaluation's ``results.json`` where they exist, plus ``episodes_per_min``) and ``fast_episodes.jsonl``.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from so101_core.lerobot_schema import LANGUAGE_KEY
from so101_core.lerobot_units import from_lerobot, to_lerobot

from .admission import ChunkLimits, admit_chunk
from .blending import Plan
from .config import EvalConfig, load_policy_config
from .metrics import success_by_target_slot, wilson_interval
from .protocol import check_action
from .sim_env import EnvConfig, VialRackEnv


@dataclass(frozen=True)
class FastResult:
    """Success by our detector and the workshop rule over ``episodes``, with Wilson 95 % intervals."""

    episodes: int
    successes: int
    workshop_successes: int
    success_rate: float
    wilson_low: float
    wilson_high: float
    workshop_rate: float
    episodes_per_min: float
    wall_s: float
    results_json: Path


def batched_observation(pixels: dict[str, np.ndarray], state: np.ndarray, task: str) -> dict[str, Any]:
    """Nested N1.6 observation of B environments: ``pixels`` {cam: (B, H, W, 3) uint8}, ``state`` (B, 6)."""
    s = np.asarray(state, dtype=np.float32)
    return {
        "video": {cam: np.ascontiguousarray(img, dtype=np.uint8)[:, None] for cam, img in pixels.items()},
        "state": {"single_arm": s[:, None, :5].copy(), "gripper": s[:, None, 5:].copy()},
        "language": {LANGUAGE_KEY: [[task]] * len(s)},
    }


def _chunks(action: dict[str, Any]) -> np.ndarray:
    """(B, H, 6) rad from a reply's chunk in LeRobot units."""
    check_action(action)
    arr = np.concatenate([np.asarray(action["single_arm"]), np.asarray(action["gripper"])], axis=2)
    return from_lerobot(arr.astype(np.float64))


def make_vector_env(spec: EnvConfig, envs: int) -> Any:
    """``envs`` :class:`VialRackEnv` in their own processes (spawned: safe beside a CUDA context). They render
    headless: EGL unless ``MUJOCO_GL`` says otherwise (the variable is read when a process imports mujoco)."""
    import gymnasium as gym

    os.environ.setdefault("MUJOCO_GL", "egl")

    return gym.vector.AsyncVectorEnv(
        [functools.partial(VialRackEnv, spec) for _ in range(envs)],
        context="spawn",
        autoreset_mode=gym.vector.AutoresetMode.DISABLED,
    )


def evaluate_checkpoint_fast(
    checkpoint_dir: Path,
    out_dir: Path,
    config: EvalConfig,
    *,
    envs: int = 0,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> FastResult:
    """The ACT checkpoint at ``checkpoint_dir`` on ``config.device``, seeing its own cameras at its training
    image size (``config.width``/``height`` when set), in :func:`run_fast_evaluation`."""
    from .act_policy import ActPolicy

    policy = ActPolicy(checkpoint_dir, device=config.device)
    w, h = policy.image_size()
    size = (config.width or w, config.height or h)
    return run_fast_evaluation(policy, out_dir, config, policy.cameras, size, envs=envs, progress=progress)


def run_fast_evaluation(
    backend: Any,
    out_dir: Path,
    config: EvalConfig,
    cameras: tuple[str, ...],
    size: tuple[int, int],
    *,
    envs: int = 0,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> FastResult:
    """Run ``config.episodes`` episodes of ``backend`` (a policy-server backend: ``get_action`` / ``reset``,
    e.g. :class:`~.act_policy.ActPolicy`) seeing ``cameras`` at ``size`` (width, height) px, in ``envs``
    environments at a time (0 = one per CPU core); ``config.replan_steps`` steps between chunks (0 = horizon / 2,
    as the policy node)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    most = max(1, min(envs or os.cpu_count() or 1, config.episodes))
    waves = -(-config.episodes // most)
    n_env = -(-config.episodes // waves)  # equal waves: 50 episodes on 16 cores run as 4 waves of 13
    horizon = config.horizon
    replan = config.replan_steps or max(1, horizon // 2)
    limits = ChunkLimits.from_config(load_policy_config())
    spec = EnvConfig(
        cameras=cameras,
        width=size[0],
        height=size[1],
        episode_s=config.episode_s,
        randomize=config.randomize,
        dr_profile=config.dr_profile,
        task=config.task,
        pixels_every_step=False,  # rendered when the policy is asked (_wave), the same images, 1/replan the cost
    )
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    vec = make_vector_env(spec, n_env)
    try:
        for first in range(0, config.episodes, n_env):
            count = min(n_env, config.episodes - first)
            seeds = [config.episode_seed(first + k) for k in range(count)]
            seeds += [config.seed + first + k for k in range(count, n_env)]  # a last wave's idle environments
            rows.extend(_wave(vec, backend, spec, seeds, horizon, replan, config.blend_alpha, limits)[:count])
            for k, row in enumerate(rows[first:]):
                row["index"] = first + k
                if progress is not None:
                    progress(row["index"] + 1, config.episodes, row)
    finally:
        vec.close()
    wall = time.perf_counter() - t0
    return _summarize(rows, out_dir, config, cameras, size, n_env, replan, wall)


def _wave(
    vec: Any, backend: Any, spec: EnvConfig, seeds: list[int], horizon: int, replan: int, alpha: float,
    limits: ChunkLimits,
) -> list[dict[str, Any]]:  # fmt: skip
    """One wave: every environment from its seed until its episode ends; a row per environment. Chunks enter
    each plan through :func:`~.admission.admit_chunk`, as in the policy node; where an environment has no
    planned action (every chunk so far refused) it holds the position measured when the hold began."""
    obs, _ = vec.reset(seed=seeds)
    backend.reset(None)
    n = len(seeds)
    plans: list[Plan | None] = [None] * n
    last: list[np.ndarray | None] = [None] * n  # the last command (rad)
    hold: list[np.ndarray | None] = [None] * n
    stats = [{"clamped_values": 0, "rejected_chunks": 0, "held_steps": 0} for _ in range(n)]
    done = np.zeros(n, dtype=bool)
    info_last: list[dict[str, Any]] = [{} for _ in range(n)]
    step = 0
    queries = 0
    while not done.all():
        q = from_lerobot(np.asarray(obs["agent_pos"], dtype=np.float64))
        if step % replan == 0 or any(p is None or p.remaining(step) == 0 for p in plans):
            pixels = _render(vec, spec)
            chunk, _ = backend.get_action(batched_observation(pixels, obs["agent_pos"], spec.task), {"step": step})
            queries += 1
            for i, rows in enumerate(_chunks(chunk)):
                ref = last[i]
                admitted = admit_chunk(plans[i], rows, step, step, horizon, alpha, limits, q[i] if ref is None else ref)
                plans[i] = admitted.plan
                stats[i]["clamped_values"] += admitted.clamped
                stats[i]["rejected_chunks"] += bool(admitted.refused)
        command = np.empty((n, 6))
        for i, plan in enumerate(plans):
            action = plan.at(step) if plan is not None else None
            if action is None:
                hold[i] = q[i].copy() if hold[i] is None else hold[i]
                action = hold[i]
                stats[i]["held_steps"] += int(not done[i])
            else:
                hold[i] = None
            command[i] = last[i] = action
        obs, _, terminated, truncated, info = vec.step(np.asarray(to_lerobot(command), dtype=np.float32))
        step += 1
        for i in range(n):
            if not done[i] and (terminated[i] or truncated[i]):
                done[i] = True
                info_last[i] = {
                    k: (v[i] if isinstance(v, np.ndarray) else v) for k, v in info.items() if not k.startswith("_")
                }
    return [
        {
            "seed": int(seeds[i]),
            "success": bool(info_last[i]["is_success"]),
            "workshop_success": bool(info_last[i]["workshop_success"]),
            "steps": int(info_last[i]["steps"]),
            "target_slot": int(info_last[i]["target_slot"]),
            "queries": queries,
            **stats[i],
        }
        for i in range(n)
    ]


def _render(vec: Any, spec: EnvConfig) -> dict[str, np.ndarray]:
    """Every environment's cameras rendered now: {camera: (B, H, W, 3) uint8}."""
    per_env = vec.call("observe")
    return {cam: np.stack([p[cam] for p in per_env]) for cam in spec.cameras}


def _summarize(
    rows: list[dict[str, Any]], out_dir: Path, config: EvalConfig, cameras: tuple[str, ...], size: tuple[int, int],
    envs: int, replan: int, wall: float,
) -> FastResult:  # fmt: skip
    n = len(rows)
    ok = sum(r["success"] for r in rows)
    shop = sum(r["workshop_success"] for r in rows)
    iv, shop_iv = wilson_interval(ok, n), wilson_interval(shop, n)
    summary = {
        "evaluator": "fast (vectorized twin environments, batched policy)",
        "episodes": n,
        "successes": ok,
        "success_rate": ok / n if n else 0.0,
        "wilson_95": [iv.low, iv.high],
        "workshop_successes": shop,
        "workshop_rate": shop / n if n else 0.0,
        "workshop_wilson_95": [shop_iv.low, shop_iv.high],
        "by_target_slot": success_by_target_slot(rows),
        "episodes_per_min": 60.0 * n / wall if wall > 0 else 0.0,
        "wall_s": wall,
        "envs": envs,
        "replan_every": replan,
        "config": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(config).items()},
        "cameras": list(cameras),
        "image_size": list(size),
    }
    results = out_dir / "fast_results.json"
    results.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    with (out_dir / "fast_episodes.jsonl").open("w", encoding="utf-8") as sink:
        for row in rows:
            sink.write(json.dumps(row) + "\n")
    return FastResult(
        n, ok, shop, summary["success_rate"], iv.low, iv.high, summary["workshop_rate"], summary["episodes_per_min"],
        wall, results,
    )  # fmt: skip
