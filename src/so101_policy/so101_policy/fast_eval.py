"""``so101 eval --fast``: the evaluation's episodes in N twin environments at once, the policy batched.

The same episodes as the graph evaluation (:mod:`.evaluate`): seeds ``seed .. seed + episodes - 1`` (or
``scene_seeds``), the same twin, DR profile, command filter and success rules (:class:`~.sim_env.VialRackEnv`, one
process per environment), and chunks executed as the policy node executes them (``horizon``, a new chunk every
``replan_every`` steps, admitted, clamped and EMA-blended, or with ``temporal_ensemble_coeff`` > 0 temporally
ensembled as ACT does, by :func:`~.admission.admit_chunk` with policy.yaml's limits; a hold where no action is
planned). The graph evaluation stays the figure of record for deployment; this one is for development (a sweep
scores its runs here). What differs, by construction: inference takes no sim time here (in the graph the chunk is
used from the step its reply arrives), and the policy sees the images rendered after the last step (in the graph:
the newest frame of the 30 Hz camera stream).

``envs`` environments run the episodes; one whose episode ends takes the next seed at the next replanning step
(a multiple of ``replan_every`` on the common clock), so every episode's own clock replans at its multiples of
``replan_every`` and the policy answers all environments in one batch (``options["step"]``: each row's step in
its episode). No environment waits for the slowest episode of a wave. Writes ``fast_results.json`` (the same
keys as the graph evaluation's ``results.json`` where they exist, plus ``episodes_per_min``, over the whole wall
time, ``episodes_per_min_warm`` without the environment processes' start and close, and ``cold_start_s``) and
``fast_episodes.jsonl``. ``phases`` in the results: where the wall time went (environment processes' start,
resets, renders, policy queries, steps, end-of-episode outcomes: seconds and calls each; the rest is the loop's
own work), so a slow run says which part to speed up.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from so101_core.lerobot_schema import LANGUAGE_KEY
from so101_core.lerobot_units import from_lerobot, to_lerobot

from .admission import ChunkLimits, admit_chunk
from .blending import Plan
from .config import EvalConfig, load_policy_config
from .metrics import failure_counts, releases_by_outcome, success_by_target_slot, wilson_interval
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
    episodes_per_min_warm: float
    wall_s: float
    results_json: Path


class Phases:
    """Seconds and calls per named phase of a run (``with phases("step"): ...``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - t0
            self.calls[name] += 1

    def summary(self, wall_s: float) -> dict[str, Any]:
        """{phase: {"s", "calls"}} and ``other_s``: ``wall_s`` less every phase."""
        out: dict[str, Any] = {k: {"s": round(v, 3), "calls": self.calls[k]} for k, v in self.seconds.items()}
        out["other_s"] = round(wall_s - sum(self.seconds.values()), 3)
        return out


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
    deadline: float | None = None,
) -> FastResult:
    """The checkpoint (ACT or Diffusion Policy) at ``checkpoint_dir`` on ``config.device`` (with its ``precision`` and
    ``cuda_graph``), seeing its own
    cameras at its training image size (``config.width``/``height`` when set), in :func:`run_fast_evaluation`."""
    from .lerobot_policy import load_policy

    policy = load_policy(checkpoint_dir, device=config.device, options=config.inference())
    w, h = policy.image_size()
    size = (config.width or w, config.height or h)
    return run_fast_evaluation(
        policy, out_dir, config, policy.cameras, size, envs=envs, progress=progress, deadline=deadline
    )


def run_fast_evaluation(
    backend: Any,
    out_dir: Path,
    config: EvalConfig,
    cameras: tuple[str, ...],
    size: tuple[int, int],
    *,
    envs: int = 0,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    deadline: float | None = None,
) -> FastResult:
    """Run ``config.episodes`` episodes of ``backend`` (a policy-server backend: ``get_action`` / ``reset``,
    e.g. :class:`~.lerobot_policy.LeRobotPolicy`) seeing ``cameras`` at ``size`` (width, height) px, in ``envs``
    environments at a time (0 = one per CPU core); ``config.replan_steps`` steps between chunks (0 = horizon / 2,
    as the policy node). ``deadline`` (``time.monotonic()``): no episode starts after it (those running finish);
    the results then count the episodes run (``episodes`` < ``episodes_planned``), the first ones of the seeds."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n_env = max(1, min(envs or os.cpu_count() or 1, config.episodes))
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
        pixels_every_step=False,  # rendered when the policy is asked (_run), the same images, 1/replan the cost
    )
    seeds = [config.episode_seed(i) for i in range(config.episodes)]
    phases = Phases()
    t0 = time.perf_counter()
    with phases("start"):
        vec = make_vector_env(spec, n_env)
    try:
        ex = Execution(horizon, replan, config.blend_alpha, config.temporal_ensemble_coeff, limits)
        rows = _run(vec, backend, spec, seeds, ex, progress, phases, deadline)
    finally:
        with phases("close"):
            vec.close()
    wall = time.perf_counter() - t0
    return _summarize(rows, out_dir, config, cameras, size, n_env, replan, wall, phases.summary(wall))


@dataclass(frozen=True)
class Execution:
    """How chunks are executed, as the policy node does: ``horizon`` steps of a chunk, a new one every ``replan``
    steps, EMA weight ``alpha`` on the new chunk (``ensemble_coeff`` > 0: ACT's temporal ensemble with that
    coefficient instead; 0 = the EMA), admitted within ``limits``."""

    horizon: int
    replan: int
    alpha: float
    ensemble_coeff: float
    limits: ChunkLimits


class _Episode:
    """One environment's current episode: its index in the evaluation, seed, start on the common clock, plan,
    last command and hold position (rad), and counters."""

    def __init__(self, index: int, seed: int, start: int) -> None:
        self.index, self.seed, self.start = index, seed, start
        self.plan: Plan | None = None
        self.last: np.ndarray | None = None
        self.hold: np.ndarray | None = None
        self.stats = {"clamped_values": 0, "rejected_chunks": 0, "held_steps": 0, "queries": 0}


def _run(
    vec: Any, backend: Any, spec: EnvConfig, seeds: list[int], ex: Execution,
    progress: Callable[[int, int, dict[str, Any]], None] | None, phases: Phases, deadline: float | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Every episode of ``seeds`` on ``vec``'s environments (see the module docstring); a row per episode, in
    episode order. Chunks enter each plan through :func:`~.admission.admit_chunk`, as in the policy node; where
    an environment has no planned action (every chunk so far refused) it holds the position measured when the hold
    began. An environment without an episode (more environments than episodes left) holds still, unseen. After
    ``deadline`` (``time.monotonic()``) no episode starts."""
    n = vec.num_envs
    todo = list(range(len(seeds)))

    def past_deadline() -> bool:
        if deadline is not None and time.monotonic() > deadline:
            todo.clear()
        return not todo

    past_deadline()
    running: list[_Episode | None] = [None] * n
    first = [todo.pop(0) if todo else -1 for _ in range(n)]
    with phases("reset"):
        obs, _ = vec.reset(seed=[seeds[e] if e >= 0 else seeds[0] for e in first])
        backend.reset(None)
    for i, e in enumerate(first):
        running[i] = _Episode(e, seeds[e], 0) if e >= 0 else None
    rows: dict[int, dict[str, Any]] = {}
    idle: list[int] = []  # environments whose episode ended, waiting for the next replanning step
    step = 0
    while todo or any(ep is not None for ep in running):  # every environment may end at once, with seeds left
        if step % ex.replan == 0 and idle:
            mask = np.zeros(n, dtype=bool)
            for i in idle:
                if not past_deadline():
                    e = todo.pop(0)
                    running[i], mask[i] = _Episode(e, seeds[e], step), True
            idle = []
            if mask.any():
                with phases("reset"):
                    obs, _ = vec.reset(seed=[ep.seed if ep is not None else 0 for ep in running],
                                       options={"reset_mask": mask})  # fmt: skip
        q = from_lerobot(np.asarray(obs["agent_pos"], dtype=np.float64))
        active = [i for i, ep in enumerate(running) if ep is not None]
        # each environment asks on its own schedule, as its policy node would: every replan steps, or when its plan
        # ran out (every chunk refused so far); one batched query serves those that ask, the others keep their plan
        asking = [i for i in active if step % ex.replan == 0 or _plan_ran_out(running[i], step)]
        if asking:
            with phases("render"):
                pixels = _render(vec, spec)
            local = [step - ep.start if ep is not None else 0 for ep in running]
            with phases("policy"):
                observation = batched_observation(pixels, obs["agent_pos"], spec.task)
                chunk, _ = backend.get_action(observation, {"step": local})
            rows_of = _chunks(chunk)
            for i in asking:
                ep = running[i]
                assert ep is not None
                ref = q[i] if ep.last is None else ep.last
                admitted = admit_chunk(
                    ep.plan, rows_of[i], step, step, ex.horizon, ex.alpha, ex.limits, ref,
                    ensemble_coeff=ex.ensemble_coeff,
                )  # fmt: skip
                ep.plan = admitted.plan
                ep.stats["clamped_values"] += admitted.clamped
                ep.stats["rejected_chunks"] += bool(admitted.refused)
                ep.stats["queries"] += 1
        command = q.copy()  # an environment without an episode holds where it is
        for i in active:
            ep = running[i]
            assert ep is not None
            action = ep.plan.at(step) if ep.plan is not None else None
            if action is None:
                ep.hold = q[i].copy() if ep.hold is None else ep.hold
                action = ep.hold
                ep.stats["held_steps"] += 1
            else:
                ep.hold = None
            command[i] = ep.last = action
        with phases("step"):
            obs, _, terminated, truncated, info = vec.step(np.asarray(to_lerobot(command), dtype=np.float32))
        step += 1
        ended = [i for i in active if terminated[i] or truncated[i]]
        outcomes: list[dict[str, Any]] = []
        if ended:
            with phases("outcome"):
                outcomes = vec.call("outcome")
        for i in ended:
            ep = running[i]
            assert ep is not None
            end = {k: (v[i] if isinstance(v, np.ndarray) else v) for k, v in info.items() if not k.startswith("_")}
            rows[ep.index] = {
                "seed": ep.seed,
                "success": bool(end["is_success"]),
                "workshop_success": bool(end["workshop_success"]),
                "steps": int(end["steps"]),
                "target_slot": int(end["target_slot"]),
                **outcomes[i],
                **ep.stats,
                "index": ep.index,
            }
            running[i] = None
            idle.append(i)
            if progress is not None:
                progress(len(rows), len(seeds), rows[ep.index])
    return [rows[e] for e in sorted(rows)]


def _plan_ran_out(ep: _Episode | None, step: int) -> bool:
    return ep is not None and (ep.plan is None or ep.plan.remaining(step) == 0)


def _render(vec: Any, spec: EnvConfig) -> dict[str, np.ndarray]:
    """Every environment's cameras rendered now: {camera: (B, H, W, 3) uint8}."""
    per_env = vec.call("observe")
    return {cam: np.stack([p[cam] for p in per_env]) for cam in spec.cameras}


def _summarize(
    rows: list[dict[str, Any]], out_dir: Path, config: EvalConfig, cameras: tuple[str, ...], size: tuple[int, int],
    envs: int, replan: int, wall: float, phases: dict[str, Any],
) -> FastResult:  # fmt: skip
    n = len(rows)
    warm = wall - phases["start"]["s"] - phases["close"]["s"]  # the episodes alone, without the processes' start/end
    ok = sum(r["success"] for r in rows)
    shop = sum(r["workshop_success"] for r in rows)
    iv, shop_iv = wilson_interval(ok, n), wilson_interval(shop, n)
    summary = {
        "evaluator": "fast (vectorized twin environments, batched policy)",
        "episodes": n,
        "episodes_planned": config.episodes,
        "successes": ok,
        "success_rate": ok / n if n else 0.0,
        "wilson_95": [iv.low, iv.high],
        "workshop_successes": shop,
        "workshop_rate": shop / n if n else 0.0,
        "workshop_wilson_95": [shop_iv.low, shop_iv.high],
        "by_target_slot": success_by_target_slot(rows),
        "failures": failure_counts(rows),
        "releases": releases_by_outcome(rows),
        "episodes_per_min": 60.0 * n / wall if wall > 0 else 0.0,
        "episodes_per_min_warm": 60.0 * n / warm if warm > 0 else 0.0,
        "wall_s": wall,
        "cold_start_s": phases["start"]["s"],
        "phases": phases,
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
        summary["episodes_per_min_warm"], wall, results,
    )  # fmt: skip
