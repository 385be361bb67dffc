"""``so101 eval``: N seeded, randomized episodes in the twin through the real graph, and a report.

Processes: a zenoh router, the policy server (``so101_policy.serve``), the sim node (``so101_nodes.sim_node``,
cameras rendered at the policy's image size) and the policy node (``so101_policy.nodes.policy_node``,
``sim:=true``), started from the launch description of :mod:`.evaluation_graph` by the launch engine, each child's
output in ``<out>/logs/<node>.log``; this process joins the graph as the ``evaluator`` node: per episode it stops
the policy, resets the twin with seed ``seed + i`` (same seed → same scene), starts the policy and records until
success or ``episode_s`` of sim time (:mod:`.monitor`), through the
:class:`~so101_nodes.episode_commander.EpisodeCommander`. Success is judged by our detector and by the upstream
workshop rule; rates carry Wilson 95 % intervals. FRAME metrics compare the run with the scripted expert's rollout
on the same seed (the reference), see :mod:`.metrics`. Episodes already in ``<out>/episodes.jsonl`` are skipped
(resume). Each failed episode gets a reason (:mod:`.outcome`). Outputs: ``episodes.jsonl``, ``results.json``,
``report.html`` with tracking plots and videos (the first ``videos`` episodes, then the first success and the first
failure beyond them, see :func:`video_wanted`), and an MLflow run (local sqlite store in ``<out>`` by default).
"""

from __future__ import annotations

import json
import math
import os
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from nodegraph.launch.errors import LaunchError
from nodegraph.launch.process import ManagedProcess
from nodegraph.launch.runner import RunnerOptions, launched
from nodegraph.transport.zenoh.config import free_endpoint, free_port
from nodegraph.transport.zenoh.router import RouterError
from so101_core.lerobot_schema import camera_of, is_image_key
from so101_nodes.episode_commander import EpisodeCommander, EpisodeCommandError

from . import report
from .checkpoints import pretrained_dir, read_json
from .client import PolicyClient
from .config import EvalConfig
from .errors import PolicyError
from .evaluation_graph import POLICY_NODE, SERVER_NODE, SIM_NODE, evaluation_arguments, evaluation_description
from .inference_options import InferenceOptions
from .metrics import (
    aggregate,
    failure_counts,
    frame_metrics,
    releases_by_outcome,
    success_by_target_slot,
    wilson_interval,
)
from .outcome import failure_reason, final_placement, release_placement
from .sim_env import make_twin

STOP_GRACE_S = 10.0
"""Seconds each child gets after SIGINT, and again after SIGTERM, before the next signal."""
CALL_ATTEMPT_S = 10.0
CALL_TIMEOUT_S = 3 * CALL_ATTEMPT_S
"""Seconds a service call of an episode may take (a try waits CALL_ATTEMPT_S: a just-discovered service may miss
its first query)."""


@dataclass(frozen=True)
class EvalResult:
    """Success over ``episodes`` by our detector (with the Wilson 95 % interval), by the workshop rule (None
    where the rule is unavailable), aggregated FRAME metrics, and where the report lies."""

    success_rate: float
    successes: int
    episodes: int
    wilson_low: float
    wilson_high: float
    report_html: Path
    workshop_successes: int | None = None
    workshop_rate: float | None = None
    workshop_wilson: tuple[float, float] | None = None
    metrics: dict[str, float] | None = None
    results_json: Path | None = None


@dataclass(frozen=True)
class PolicySpec:
    """What the server hosts: the ``so101 serve`` arguments, the cameras it needs and their image size."""

    serve_args: tuple[str, ...]
    cameras: tuple[str, ...]
    width: int
    height: int
    label: str


def checkpoint_spec(checkpoint_dir: Path, device: str = "auto", options: InferenceOptions | None = None) -> PolicySpec:
    """A LeRobot checkpoint (ACT or Diffusion Policy) served on ``device`` with ``options`` (None: the defaults,
    eager fp32): cameras and image size from its config.json."""
    path = pretrained_dir(Path(checkpoint_dir))
    cfg = read_json(path / "config.json")
    images = {k: v for k, v in cfg.get("input_features", {}).items() if is_image_key(k)}
    if not images:
        raise PolicyError(f"{path}/config.json names no camera inputs")
    _, h, w = next(iter(images.values()))["shape"]
    cams = tuple(camera_of(k) for k in images)
    serve_args = ("--checkpoint", str(path), "--device", device, *(options or InferenceOptions()).serve_flags().split())
    return PolicySpec(serve_args, cams, int(w), int(h), str(checkpoint_dir))


def evaluate_policy(
    checkpoint_dir: Path, out_dir: Path, config: EvalConfig, *, deadline: float | None = None
) -> EvalResult:
    """Evaluate the checkpoint (ACT or Diffusion Policy) at ``checkpoint_dir`` (see the module docstring); ``deadline``
    (``time.monotonic()``): no episode starts after it."""
    spec = checkpoint_spec(checkpoint_dir, config.device, config.inference())
    return run_evaluation(spec, out_dir, config, deadline=deadline)


def _episode_summary(log: Any, reference: dict[str, np.ndarray] | None, monitor: Any) -> dict[str, Any]:
    arrays = log.arrays()
    steps = len(arrays["t"])
    success = log.success_step >= 0
    out: dict[str, Any] = {
        "seed": log.seed,
        "target_slot": log.target_slot,
        "prefilled": list(log.prefilled),
        "steps": steps,
        "duration_s": float(arrays["t"][-1]) if steps else 0.0,
        "success": success,
        "workshop_success": (log.workshop_step >= 0) if monitor.workshop is not None else None,
        "failure": failure_reason(arrays, success, monitor.task, monitor.twin.config.rack),
        "final_placement": final_placement(arrays, log.target_slot, monitor.twin.config.rack),
        "release_placement": release_placement(arrays, log.target_slot, monitor.twin.config.rack),
        "success_step": log.success_step,
        "workshop_step": log.workshop_step,
        "holds": sum(1 for s in log.policy_status if s.startswith("holding")),
        "hold_reasons": dict(Counter(s for s in log.policy_status if s.startswith("holding")).most_common(3)),
    }
    if steps >= 3:
        ref_q = reference["q"] if reference is not None else None
        ref_a = reference["actions"] if reference is not None else None
        out["metrics"] = frame_metrics(arrays["q"], arrays["cmd"], ref_q, ref_a)
    else:
        out["metrics"] = {}
    return out


def _expert_reference(seed: int, randomize: bool, dr_profile: str) -> dict[str, np.ndarray] | None:
    """The scripted expert's rollout on the same scene (q and actions, rad), or None when it fails to plan."""
    from so101_core.sim.errors import SimError
    from so101_core.sim.rollout import run_scripted_episode

    try:
        with make_twin(randomize, dr_profile) as twin:
            rec = run_scripted_episode(twin, seed, record=True)
    except SimError:
        return None
    return {"q": rec.joint_positions, "actions": rec.actions, "success": np.array(rec.success)}


def _videos_of(rows: list[dict[str, Any]]) -> set[bool]:
    """The outcomes (success True/False) that already have a video."""
    return {bool(r["success"]) for r in rows if r.get("video")}


def video_wanted(index: int, rows: list[dict[str, Any]], videos: int) -> bool:
    """Whether episode ``index`` records frames: the first ``videos`` episodes do, and after them every episode
    until one success and one failure have a video (``rows``: the episodes before it); none when ``videos`` is 0."""
    return videos > 0 and (index < videos or len(_videos_of(rows)) < 2)


def video_kept(index: int, success: bool, rows: list[dict[str, Any]], videos: int) -> bool:
    """Whether a recorded episode keeps its video and tracking plot: one of the first ``videos``, or the first
    of its outcome."""
    return index < videos or success not in _videos_of(rows)


def _done_episodes(path: Path) -> dict[int, dict[str, Any]]:
    done: dict[int, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                done[int(row["index"])] = row
            except (ValueError, KeyError):
                continue  # a line cut by a crash
    return done


def run_evaluation(
    spec: PolicySpec,
    out_dir: Path,
    config: EvalConfig,
    *,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    deadline: float | None = None,
    real: Path | None = None,
) -> EvalResult:
    """Run the episodes against the policy ``spec`` describes and write the report into ``out_dir``: in one graph,
    or with ``config.graphs`` > 1 in that many graphs side by side (:mod:`.evaluate_graphs`).

    ``deadline`` (``time.monotonic()``): no episode starts after it; the result then counts the episodes run."""
    if config.graphs > 1:
        from .evaluate_graphs import run_graphs

        rows = run_graphs(spec, Path(out_dir), config, deadline=deadline)
    else:
        rows = run_episodes(spec, Path(out_dir), config, progress=progress, deadline=deadline)
    return summarize(rows, Path(out_dir), config, spec, real)


def run_episodes(
    spec: PolicySpec,
    out_dir: Path,
    config: EvalConfig,
    *,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
    deadline: float | None = None,
) -> list[dict[str, Any]]:
    """The episodes of ``config`` in one evaluation graph (:mod:`.evaluation_graph`, run by the launch engine);
    a row per episode (also in ``episodes.jsonl``, from which a rerun resumes). Each child's output is in
    ``<out_dir>/logs/<node>.log``, the launcher's in ``logs/launch.log``."""
    out_dir = Path(out_dir)
    logs = out_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    cameras = config.cameras or spec.cameras
    missing = [c for c in spec.cameras if c not in cameras]
    if missing:
        raise PolicyError(f"the policy needs cameras {list(spec.cameras)}; eval.cameras lacks {missing}")
    width, height = config.width or spec.width, config.height or spec.height
    server = _Server(free_port(), f"eval{secrets.token_hex(8)}")  # never all digits: YAML would read a number
    graph = evaluation_description(spec.serve_args)
    arguments = evaluation_arguments(
        config,
        cameras=cameras,
        policy_cameras=spec.cameras,
        width=width,
        height=height,
        server_port=server.port,
        token=server.token,
    )
    endpoint = free_endpoint()
    with (logs / "launch.log").open("w", encoding="utf-8") as launch_log:
        options = RunnerOptions(
            endpoint=endpoint,
            sigint_timeout_s=STOP_GRACE_S,
            sigterm_timeout_s=STOP_GRACE_S,
            stream=launch_log,
            colour=False,
            log_dir=logs,
            env={"HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "1")},
        )
        try:
            with launched(graph, arguments, options) as launch:
                children = [launch.process(name) for name in (SERVER_NODE, SIM_NODE, POLICY_NODE)]
                video_camera = "side" if "side" in cameras else cameras[0]
                return _evaluate_in(children, endpoint, server, config, out_dir, video_camera, progress, deadline)
        except (LaunchError, RouterError) as exc:
            raise PolicyError(f"the evaluation graph did not start: {exc}") from exc


@dataclass(frozen=True)
class _Server:
    """Where the evaluation's policy server listens (TCP port on loopback) and the token it wants."""

    port: int
    token: str


def _evaluate_in(
    children: list[ManagedProcess],
    endpoint: str,
    server: _Server,
    config: EvalConfig,
    out_dir: Path,
    video_camera: str,
    progress: Callable[[int, int, dict[str, Any]], None] | None,
    deadline: float | None,
) -> list[dict[str, Any]]:
    """The episodes, with the graph's ``children`` (server, sim, policy node) started, the server listening, and
    the router on ``endpoint``: this process joins as the ``evaluator`` node and leaves before the graph stops."""
    from nodegraph.transport.zenoh.context import Context
    from nodegraph.transport.zenoh.node import ZenohNode

    from .monitor import EpisodeMonitor

    with PolicyClient(port=server.port, api_token=server.token, timeout_ms=5000) as probe:
        probe.wait_ready(60.0)  # warmed up: no episode's clock runs while the model initialises
    episodes_file = out_dir / "episodes.jsonl"
    done = _done_episodes(episodes_file)
    ctx = node = twin = None
    try:
        ctx = Context(endpoint)
        if not ctx.wait_for_router(10.0):
            raise PolicyError("evaluator cannot reach its zenoh router")
        node = ZenohNode("evaluator", context=ctx)
        twin = make_twin(config.randomize, config.dr_profile)
        monitor = EpisodeMonitor(node, twin, video_camera if config.videos else None, POLICY_NODE)
        commander = EpisodeCommander(node, POLICY_NODE, timeout_s=CALL_TIMEOUT_S, attempt_s=CALL_ATTEMPT_S)
        try:
            commander.wait_for_services(60.0)
        except EpisodeCommandError as exc:
            tails = [(c.name, c.tail(500)) for c in children]
            raise PolicyError(f"service {exc.service} did not appear: {tails}") from exc
        commander.until(lambda: monitor.latest_stamp() >= 0, 60.0, poll_s=0.05)  # the twin is up and stepping
        rows = [done[i] for i in sorted(done) if i < config.episodes]
        with episodes_file.open("a", encoding="utf-8") as sink:
            for i in range(config.episodes):
                if i in done:
                    continue
                if deadline is not None and time.monotonic() > deadline:
                    break
                for child in children:
                    if not child.alive():
                        raise PolicyError(f"{child.name} died: {child.tail()}")
                try:
                    row = _episode(commander, monitor, i, rows, config, out_dir)
                except EpisodeCommandError as exc:  # the service that failed, named
                    raise PolicyError(str(exc)) from exc
                sink.write(json.dumps(row) + "\n")
                sink.flush()
                rows.append(row)
                if progress is not None:
                    progress(i + 1, config.episodes, row)
    finally:
        _close_evaluator(node, ctx, twin)
    return rows


def _close_evaluator(node: Any, ctx: Any, twin: Any) -> None:
    """Shut the evaluator's node, its zenoh session and its twin (those that exist)."""
    if node is not None:
        node.shutdown()
    if ctx is not None:
        ctx.close()
    if twin is not None:
        twin.close()


def _episode(
    commander: EpisodeCommander,
    monitor: Any,
    index: int,
    before: list[dict[str, Any]],
    cfg: EvalConfig,
    out_dir: Path,
) -> dict[str, Any]:
    """One episode, driven through ``commander`` (the sim's reset, the policy node's start and stop: an
    EpisodeCommandError names the service that fails); ``before``: the episodes' rows so far."""
    rtf = cfg.real_time_factor
    seed = cfg.episode_seed(index)
    commander.stop()
    commander.reset(seed)
    stamp = monitor.latest_stamp()
    commander.until(lambda: monitor.latest_stamp() > stamp, 10.0, poll_s=0.01)  # a state from the new episode
    recorded = video_wanted(index, before, cfg.videos)
    monitor.begin(seed, record_frames=recorded)
    time.sleep(0.3 / rtf)  # fresh images of the new scene before the first query
    commander.start()
    succeeded_at: float | None = None

    def over() -> bool:
        """The episode's end: ``episode_s`` of sim time, or our success confirmed by the workshop rule (or held
        for 1 s of sim time)."""
        nonlocal succeeded_at
        t, ours, shop = monitor.progress()
        if t >= cfg.episode_s:
            return True
        if ours and succeeded_at is None:
            succeeded_at = t
        return succeeded_at is not None and (shop or t - succeeded_at > 1.0)

    commander.until(over, cfg.episode_s / rtf * 3 + 30.0)
    commander.stop()
    log = monitor.end()
    reference = _expert_reference(seed, cfg.randomize, cfg.dr_profile)
    row = _episode_summary(log, reference, monitor)
    row["index"] = index
    row["reference_success"] = bool(reference["success"]) if reference is not None else None
    if recorded and video_kept(index, row["success"], before, cfg.videos):
        arrays = log.arrays()
        row["plot"] = report.tracking_plot(
            arrays["t"], arrays["q"], arrays["cmd"], out_dir / f"tracking_{index:03d}.png"
        )
        row["video"] = report.write_video(log.frames, cfg.video_fps, out_dir / f"episode_{index:03d}.mp4")
    return row


def summarize(
    rows: list[dict[str, Any]], out_dir: Path, cfg: EvalConfig, spec: PolicySpec, real: Path | None = None
) -> EvalResult:
    """results.json, report.html and the MLflow run for the episode ``rows``; with ``real`` (a sim-vs-real
    table file, :mod:`.sim_vs_real`) the report also carries the reality-gap table."""
    n = len(rows)
    ok = sum(1 for r in rows if r["success"])
    shop_known = bool(rows) and all(r.get("workshop_success") is not None for r in rows)
    shop = sum(1 for r in rows if r.get("workshop_success")) if shop_known else None
    iv = wilson_interval(ok, n)
    metrics = aggregate([r["metrics"] for r in rows if r.get("metrics")])
    summary: dict[str, Any] = {
        "policy": spec.label,
        "episodes": n,
        "successes": ok,
        "success_rate": ok / n if n else 0.0,
        "wilson_95": [iv.low, iv.high],
        "workshop_successes": shop,
        "workshop_rate": (shop / n if n else 0.0) if shop is not None else None,
        "workshop_wilson_95": list(asdict(wilson_interval(shop, n)).values()) if shop is not None else None,
        "by_target_slot": success_by_target_slot(rows),
        "failures": failure_counts(rows),
        "releases": releases_by_outcome(rows),
        "metrics": metrics,
        "config": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(cfg).items()},
        "cameras": list(spec.cameras),
        "image_size": [spec.width, spec.height],
    }
    if real is not None:
        from .sim_vs_real import sim_vs_real_rows

        summary["sim_vs_real"] = sim_vs_real_rows(real, summary)
    results = out_dir / "results.json"
    results.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    html = report.write_html(summary, rows, out_dir / "report.html")
    _log_mlflow(summary, out_dir, cfg)
    return EvalResult(
        success_rate=summary["success_rate"],
        successes=ok,
        episodes=n,
        wilson_low=iv.low,
        wilson_high=iv.high,
        report_html=html,
        workshop_successes=shop,
        workshop_rate=summary["workshop_rate"],
        workshop_wilson=tuple(summary["workshop_wilson_95"]) if shop is not None else None,
        metrics=metrics,
        results_json=results,
    )


def _log_mlflow(summary: dict[str, Any], out_dir: Path, cfg: EvalConfig) -> None:
    try:
        import mlflow
    except ImportError:  # results.json is the record
        return

    uri = cfg.tracking_uri or f"sqlite:///{(out_dir / 'mlflow.db').resolve()}"
    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(cfg.experiment) is None:
        artifacts = (out_dir / "mlartifacts").resolve().as_uri() if not cfg.tracking_uri else None
        mlflow.create_experiment(cfg.experiment, artifact_location=artifacts)
    mlflow.set_experiment(cfg.experiment)
    with mlflow.start_run(run_name=out_dir.name):
        mlflow.log_params({"policy": summary["policy"], **{f"eval.{k}": v for k, v in summary["config"].items()}})
        values = {
            "success_rate": summary["success_rate"],
            "wilson_low": summary["wilson_95"][0],
            "wilson_high": summary["wilson_95"][1],
            **{k.replace("/", "_"): v for k, v in summary["metrics"].items()},
        }
        if summary["workshop_rate"] is not None:
            values["workshop_rate"] = summary["workshop_rate"]
        mlflow.log_metrics({k: float(v) for k, v in values.items() if v is not None and math.isfinite(float(v))})
        for name in ("results.json", "report.html", "episodes.jsonl"):
            if (out_dir / name).is_file():
                mlflow.log_artifact(str(out_dir / name))
