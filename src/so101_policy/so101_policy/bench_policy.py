"""``so101 bench policy``: inference latency per chunk, control-loop jitter at 30 Hz, training throughput and
the sim success rate of a trained policy (ACT or Diffusion Policy).

- ``inference_ms`` p50/p99: one ``get_action`` round trip through a real ZMQ socket (client → server → policy →
  client) with ``cameras`` × (height × width) RGB frames, after ``warmup`` calls; ``backend_ms``: the policy alone;
  ``cold_start_ms``: the first call after loading (CUDA kernels, allocations, a CUDA graph's capture). With
  ``--full-resolution`` on CUDA, once per :data:`CUDA_VARIANTS` entry, each with ``max_abs_diff_vs_fp32_eager``:
  the largest difference of its chunk from the eager fp32 model's on the same observation (dataset units: deg,
  gripper 0-100), the check that a variant computes what the model does.
- ``transport`` (``inference_ms`` p50/p99): the same round trip to a server whose backend answers a fixed chunk
  (:func:`transport_latency`): the wire alone (packing, ZMQ, unpacking both ways), with the message sizes;
- ``loop_period_ms`` / ``loop_jitter_ms_p99`` (|period − 1/30 s|) and ``deadline_misses`` (periods over 1.5 × the
  nominal one) of the policy node's 30 Hz timer, with a replay server and fed inputs, through a real router.
- ``train_samples_per_s``: from a :class:`~so101_policy.train.TrainResult` JSON (``so101 train`` writes one) or
  measured by a short run; ``sim_success_rate`` (with ``episodes`` and ``demos``): from an eval ``results.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from nodegraph.images import image_fields
from nodegraph.transport.zenoh.config import free_endpoint
from so101_core.lerobot_schema import ACTION, OBS_STATE, image_key
from so101_core.lerobot_units import DEGREES_PER_COUNT

from .config import TrainConfig
from .inference_options import InferenceOptions
from .protocol import observation
from .server import PolicyServer, ServerConfig

# on CUDA the full-resolution latency is measured for each of these; `so101 serve` takes the best one's flags.
# torch.compile's reduce-overhead mode is not among them: it recompiled at every call (cold start 105 s, p99
# 25.4 ms, bench/results/serving_h200_session6), and --cuda-graph makes the graphs it was meant to
CUDA_VARIANTS = (
    InferenceOptions("fp32"),
    InferenceOptions("bf16"),
    InferenceOptions("fp32", cuda_graph=True),
    InferenceOptions("bf16", cuda_graph=True),
)
VARIANT_CHECK = (
    "max_abs_diff_vs_fp32_eager: max |chunk - eager fp32 chunk| of the same synthetic policy on the same "
    "observation, dataset units (deg; gripper 0-100): 0 up to float rounding for fp32 variants, bf16's rounding else. "
    "The headline (inference_ms_p99, the serve flags) is the lowest p99 among the variants within one servo count "
    "(360/4095 deg) of eager fp32: a faster variant that would command the arm differently does not count"
)
HEADLINE_MAX_ABS_DIFF = DEGREES_PER_COUNT  # deg: a variant further than this from eager fp32 is not the headline
SYNTHETIC_STATE_STD = 30.0  # deg (gripper: 0-100), synthetic_checkpoint's state spread about its centre
SYNTHETIC_ACTION_STD = 0.05  # deg, its actions' spread: moves an evaluator's chunk admission accepts
GOALS = {"inference_ms_p99_max_h200": 15.0, "loop_jitter_ms_p99_max": 2.0, "sim_success_rate_min": 0.9}


def _percentiles(values: list[float]) -> dict[str, float]:
    a = np.asarray(values) * 1e3
    return {"p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)), "max": float(a.max())}


def synthetic_checkpoint(
    out_dir: Path,
    width: int,
    height: int,
    cameras: tuple[str, ...] = ("ego", "side", "top"),
    centre: npt.ArrayLike | None = None,
    train: TrainConfig | None = None,
) -> Path:
    """An untrained policy of ``train``'s type and architecture (default: train.yaml's) for ``cameras`` ×
    (height × width) images, saved like a checkpoint: latency does not depend on the weights, so this measures a
    full-resolution policy.

    ``centre`` (6,) LeRobot units (e.g. the robot's home pose): the normalisation centres states there (std
    :data:`SYNTHETIC_STATE_STD`) and actions within :data:`SYNTHETIC_ACTION_STD` of it, so the untrained policy asks
    for small moves about that pose that an evaluator admits (every episode then runs its full length: the fast
    evaluator's worst case); None: zero mean, unit std."""
    import torch
    from lerobot.policies import make_pre_post_processors

    from .config import load_train_config
    from .policy_types import lerobot_class, lerobot_config

    cfg = train or load_train_config()
    features = {
        OBS_STATE: {"dtype": "float32", "shape": (6,), "names": None},
        "action": {"dtype": "float32", "shape": (6,), "names": None},
        **{
            image_key(c): {
                "dtype": "video",
                "shape": (height, width, 3),
                "names": ["height", "width", "channels"],
            }
            for c in cameras
        },
    }
    policy_cfg = lerobot_config(cfg, features, [image_key(c) for c in cameras], "cpu")
    mean = torch.zeros(6) if centre is None else torch.as_tensor(np.asarray(centre, dtype=np.float32))
    spread = (
        {OBS_STATE: 1.0, ACTION: 1.0}
        if centre is None
        else {OBS_STATE: SYNTHETIC_STATE_STD, ACTION: SYNTHETIC_ACTION_STD}
    )
    stats: dict[str, dict[str, Any]] = {
        k: {"mean": mean, "std": torch.full((6,), spread[k]), "min": mean - spread[k], "max": mean + spread[k]}
        for k in (OBS_STATE, ACTION)
    }
    for c in cameras:
        stats[image_key(c)] = {"mean": torch.full((3, 1, 1), 0.5), "std": torch.full((3, 1, 1), 0.25)}
    policy = lerobot_class(cfg.policy)(policy_cfg)
    pre, post = make_pre_post_processors(policy_cfg, dataset_stats=stats)
    target = out_dir / "pretrained_model"
    policy.save_pretrained(target)
    pre.save_pretrained(target)
    post.save_pretrained(target)
    return target


def bench_observation(cameras: tuple[str, ...], width: int, height: int) -> dict[str, Any]:
    """The observation every latency call sends: random (seed 0) ``cameras`` x (height x width) frames, zero state."""
    rng = np.random.default_rng(0)
    frames = {c: rng.integers(0, 255, (height, width, 3), dtype=np.uint8) for c in cameras}
    return observation(frames, np.zeros(6, np.float32), "put the vial in the rack")


def _chunk(policy: Any, obs: dict[str, Any]) -> np.ndarray:
    """(B, H, 6) float32: ``policy``'s chunk for ``obs``, arm joints then gripper, dataset units."""
    action, _ = policy.get_action(obs, None)
    return np.concatenate([action["single_arm"], action["gripper"]], axis=-1)


def eager_chunk(checkpoint: Path, device: str, width: int = 640, height: int = 480) -> np.ndarray:
    """(B, H, 6): the chunk of the checkpoint loaded in fp32 without compilation or CUDA graphs, for
    :func:`bench_observation`: what :func:`inference_latency`'s ``reference`` compares a variant with."""
    from .lerobot_policy import load_policy

    policy = load_policy(checkpoint, device=device)
    return _chunk(policy, bench_observation(policy.cameras, width, height))


def inference_latency(
    checkpoint: Path,
    device: str,
    calls: int = 200,
    warmup: int = 10,
    width: int = 640,
    height: int = 480,
    options: InferenceOptions | None = None,
    reference: np.ndarray | None = None,
) -> dict[str, Any]:
    """Per-chunk latency of the checkpoint (ACT or Diffusion Policy) run as ``options`` say (default fp32,
    eager), through the server and alone (ms); with ``reference`` (:func:`eager_chunk`), how far its chunk is
    from that one (``max_abs_diff_vs_fp32_eager``)."""
    from .lerobot_policy import load_policy

    options = options or InferenceOptions()
    warmup = min(warmup, calls)
    t0 = time.perf_counter()
    policy = load_policy(checkpoint, device=device, options=options)
    load_s = time.perf_counter() - t0
    obs = bench_observation(policy.cameras, width, height)
    t0 = time.perf_counter()
    policy.get_action(obs, None)
    cold = time.perf_counter() - t0
    backend = []
    for i in range(warmup + calls):
        t0 = time.perf_counter()
        policy.get_action(obs, None)
        if i >= warmup:
            backend.append(time.perf_counter() - t0)
    wire = _round_trips(policy, obs, calls, warmup)
    out: dict[str, Any] = {
        "device": policy.device,
        **dataclasses.asdict(options),
        "cameras": list(policy.cameras),
        "frame": [width, height],
        "policy_image_size": list(policy.image_size()),
        "chunk": policy.horizon,
        "load_s": load_s,
        "cold_start_ms": cold * 1e3,
        "backend_ms": _percentiles(backend),
        "inference_ms": _percentiles(wire),
        "calls": calls,
    }
    if reference is not None:
        out["max_abs_diff_vs_fp32_eager"] = float(np.abs(_chunk(policy, obs) - reference).max())
    return out


def headline_variant(variants: list[dict[str, Any]]) -> dict[str, Any]:
    """The measured variant with the lowest round-trip p99 among those whose chunk is within
    :data:`HEADLINE_MAX_ABS_DIFF` of eager fp32's (a variant without the check, or one that failed, never counts);
    ValueError when none qualifies."""
    close = [
        v
        for v in variants
        if "inference_ms" in v and v.get("max_abs_diff_vs_fp32_eager", np.inf) <= HEADLINE_MAX_ABS_DIFF
    ]
    if not close:
        raise ValueError(f"no inference variant measured within {HEADLINE_MAX_ABS_DIFF:.4f} deg of eager fp32")
    return min(close, key=lambda v: v["inference_ms"]["p99"])


def _round_trips(backend: Any, obs: dict[str, Any], calls: int, warmup: int) -> list[float]:
    """Seconds of each of ``calls`` ``get_action`` round trips (after ``warmup`` more) through a real ZMQ socket to a
    :class:`PolicyServer` of ``backend`` on a free port, served from a thread of this process."""
    from .client import PolicyClient

    server = PolicyServer(backend, ServerConfig(port=0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    wire = []
    try:
        with PolicyClient(port=server.port, timeout_ms=30000) as client:
            for i in range(warmup + calls):
                t0 = time.perf_counter()
                client.get_action(obs)
                if i >= warmup:
                    wire.append(time.perf_counter() - t0)
    finally:
        server.stop()
        thread.join(5.0)
    return wire


def transport_latency(
    calls: int = 200,
    warmup: int = 10,
    width: int = 640,
    height: int = 480,
    cameras: tuple[str, ...] = ("ego", "side", "top"),
) -> dict[str, Any]:
    """Per-chunk latency of the wire alone (ms): ``get_action`` round trips through a real ZMQ socket with
    ``cameras`` x (height x width) uint8 frames to a server whose backend answers a fixed chunk (a
    :class:`~.replay_policy.ReplayPolicy` of 16 actions), so packing, sending and unpacking both ways are all
    that is timed; ``request_bytes`` / ``reply_bytes``: the messages' sizes."""
    from .protocol import pack
    from .replay_policy import ReplayPolicy

    warmup = min(warmup, calls)
    backend = ReplayPolicy(np.zeros((16, 6), np.float32), horizon=16, cameras=cameras)
    obs = bench_observation(cameras, width, height)
    wire = _round_trips(backend, obs, calls, warmup)
    reply = backend.get_action(obs, None)
    return {
        "cameras": list(cameras),
        "frame": [width, height],
        "request_bytes": len(pack({"endpoint": "get_action", "data": {"observation": obs, "options": None}})),
        "reply_bytes": len(pack([reply[0], reply[1]])),
        "inference_ms": _percentiles(wire),
        "calls": calls,
    }


def loop_jitter(seconds: float = 10.0, rate_hz: float = 30.0) -> dict[str, Any]:
    """The policy node's timer periods at ``rate_hz`` with a replay server and fed joint states / images."""
    from nodegraph.transport.zenoh.context import Context
    from nodegraph.transport.zenoh.node import ZenohNode
    from nodegraph.transport.zenoh.router import RouterProcess
    from so101_core.robot_spec import JOINT_NAMES

    from .nodes.policy_node import PolicyNode
    from .replay_policy import ReplayPolicy

    endpoint = free_endpoint()
    backend = ReplayPolicy(np.zeros((100, 6), np.float32) + 10.0, horizon=16, cameras=("top",))
    server = PolicyServer(backend, ServerConfig(port=0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with contextlib.ExitStack() as stack:
        router = stack.enter_context(RouterProcess(endpoint))
        contexts = [Context(router.endpoint), Context(router.endpoint)]
        for ctx in contexts:
            stack.callback(ctx.close)
            ctx.wait_for_router(10.0)
        node = ZenohNode(
            "policy",
            args=[],
            context=contexts[0],
            parameter_overrides={"cameras": ["top"], "server_port": server.port, "rate_hz": rate_hz, "autostart": True},
        )
        logic = PolicyNode(node)
        stack.callback(logic.close)
        stack.callback(node.shutdown)
        feeder = ZenohNode("feeder", args=[], context=contexts[1])
        stack.callback(feeder.shutdown)
        joints = feeder.create_publisher("sensor_msgs/msg/JointState", "/joint_states")
        image = feeder.create_publisher("sensor_msgs/msg/Image", "/cameras/top/image_raw")
        pixels = image_fields(np.zeros((48, 64, 3), np.uint8), "rgb8")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            head = feeder.message("std_msgs/msg/Header", stamp=feeder.stamp())
            joints.publish(
                feeder.message("sensor_msgs/msg/JointState", header=head, name=list(JOINT_NAMES), position=np.zeros(6))
            )
            image.publish(feeder.message("sensor_msgs/msg/Image", header=head, **pixels))
            time.sleep(1 / 60)
        periods = list(logic.periods)
        stats = dict(logic.stats)
    server.stop()
    thread.join(5.0)
    nominal = 1.0 / rate_hz
    p = np.asarray(periods[5:])
    jitter = np.abs(p - nominal) * 1e3
    return {
        "rate_hz": rate_hz,
        "ticks": len(p),
        "loop_period_ms": _percentiles(list(p)),
        "loop_jitter_ms_p50": float(np.percentile(jitter, 50)),
        "loop_jitter_ms_p99": float(np.percentile(jitter, 99)),
        "deadline_misses": int((p > 1.5 * nominal).sum()),
        "published": stats["published"],
        "held": stats["held"],
    }


def run_policy_benchmark(
    checkpoint: Path | None,
    device: str = "auto",
    *,
    calls: int = 200,
    width: int = 640,
    height: int = 480,
    jitter_s: float = 10.0,
    train_result: Path | None = None,
    eval_results: Path | None = None,
    demos: int | None = None,
    full_resolution: bool = False,
    transport: bool = False,
    train: TrainConfig | None = None,
) -> dict[str, Any]:
    """The JSON of ``so101 bench policy`` (keys: inference_ms_p99, loop_jitter_ms_p99, train_samples_per_s,
    sim_success_rate with episodes and demos; None where that part was not run). With ``full_resolution`` the
    headline latency is that of an untrained policy of ``train``'s type and architecture (default train.yaml's)
    taking the full ``width`` × ``height`` frames (the trained checkpoint's own figure, at its training
    resolution, stays under ``inference``). With ``transport`` the wire alone is timed at ``width`` x ``height``
    (:func:`transport_latency`, key ``transport``)."""
    out: dict[str, Any] = {"inference_ms_p99": None, "loop_jitter_ms_p99": None, "train_samples_per_s": None}
    out["sim_success_rate"] = None
    if full_resolution:
        import tempfile

        import torch

        cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
        variants: list[dict[str, Any]] = []
        with tempfile.TemporaryDirectory() as tmp:
            synth = synthetic_checkpoint(Path(tmp), width, height, train=train)
            reference = eager_chunk(synth, device, width, height)
            for options in CUDA_VARIANTS if cuda else (InferenceOptions(),):
                try:
                    variants.append(inference_latency(synth, device, calls=calls, width=width, height=height,
                                                      options=options, reference=reference))  # fmt: skip
                except Exception as exc:  # a variant that cannot run here is reported, not fatal
                    variants.append({**dataclasses.asdict(options), "error": f"{exc!r}"[:500]})
        full = headline_variant(variants)
        out["inference_full_resolution"] = full
        out["inference_variants"] = variants
        out["inference_variants_check"] = VARIANT_CHECK
        out["inference_ms_p99"] = full["inference_ms"]["p99"]
        out["inference_ms_p50"] = full["inference_ms"]["p50"]
        out["inference_serve_flags"] = InferenceOptions(
            full["precision"], full["compile_mode"], full["cuda_graph"]
        ).serve_flags()
    if checkpoint is not None:
        inf = inference_latency(checkpoint, device, calls=calls, width=width, height=height)
        out["inference"] = inf
        if not full_resolution:
            out["inference_ms_p99"] = inf["inference_ms"]["p99"]
            out["inference_ms_p50"] = inf["inference_ms"]["p50"]
    if transport:
        out["transport"] = transport_latency(calls=calls, width=width, height=height)
    if jitter_s > 0:
        loop = loop_jitter(jitter_s)
        out["loop"] = loop
        out["loop_jitter_ms_p99"] = loop["loop_jitter_ms_p99"]
    if train_result is not None:
        tr = json.loads(Path(train_result).read_text())
        out["train"] = tr
        out["train_samples_per_s"] = tr["samples_per_s"]
    if eval_results is not None:
        ev = json.loads(Path(eval_results).read_text())
        out["sim_success_rate"] = ev["success_rate"]
        out["sim"] = {
            "episodes": ev["episodes"],
            "successes": ev["successes"],
            "wilson_95": ev["wilson_95"],
            "workshop_rate": ev.get("workshop_rate"),
            "demos": demos,
            "metrics": ev.get("metrics", {}),
        }
        out["episodes"], out["demos"] = ev["episodes"], demos
    out["goals"] = GOALS
    import torch

    if torch.cuda.is_available():
        out["machine"] = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    return out
