"""``so101 bench policy``: inference latency per chunk, control-loop jitter at 30 Hz, training throughput and
the sim success rate of a trained policy (ACT or Diffusion Policy).

- ``inference_ms`` p50/p99: one ``get_action`` round trip through a real ZMQ socket (client → server → policy →
  client) with ``cameras`` × (height × width) RGB frames, after ``warmup`` calls; ``backend_ms``: the policy alone;
  ``cold_start_ms``: the first call after loading (CUDA kernels, allocations).
- ``transport`` (``inference_ms`` p50/p99): the same round trip to a server whose backend answers a fixed chunk
  (:func:`transport_latency`): the wire alone (packing, ZMQ, unpacking both ways), with the message sizes;
- ``loop_period_ms`` / ``loop_jitter_ms_p99`` (|period − 1/30 s|) and ``deadline_misses`` (periods over 1.5 × the
  nominal one) of the policy node's 30 Hz timer, with a replay server and fed inputs, through a real router.
- ``train_samples_per_s``: from a :class:`~so101_policy.train.TrainResult` JSON (``so101 train`` writes one) or
  measured by a short run; ``sim_success_rate`` (with ``episodes`` and ``demos``): from an eval ``results.json``.
"""

from __future__ import annotations

import contextlib
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

from .config import TrainConfig
from .protocol import observation
from .server import PolicyServer, ServerConfig

# on CUDA the full-resolution latency is measured for each (precision, torch.compile mode); `so101 serve`
# takes the best one as --precision / --compile
CUDA_VARIANTS = (("fp32", ""), ("bf16", ""), ("bf16", "reduce-overhead"))
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


def inference_latency(
    checkpoint: Path,
    device: str,
    calls: int = 200,
    warmup: int = 10,
    width: int = 640,
    height: int = 480,
    precision: str = "fp32",
    compile_mode: str = "",
) -> dict[str, Any]:
    """Per-chunk latency of the checkpoint (ACT or Diffusion Policy), through the server and alone (ms)."""
    from .client import PolicyClient
    from .lerobot_policy import load_policy

    warmup = min(warmup, calls)
    t0 = time.perf_counter()
    policy = load_policy(checkpoint, device=device, precision=precision, compile_mode=compile_mode)
    load_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    obs = observation(
        {c: rng.integers(0, 255, (height, width, 3), dtype=np.uint8) for c in policy.cameras},
        np.zeros(6, np.float32),
        "put the vial in the rack",
    )
    t0 = time.perf_counter()
    policy.get_action(obs, None)
    cold = time.perf_counter() - t0
    backend = []
    for i in range(warmup + calls):
        t0 = time.perf_counter()
        policy.get_action(obs, None)
        if i >= warmup:
            backend.append(time.perf_counter() - t0)
    server = PolicyServer(policy, ServerConfig(port=0))
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
    return {
        "device": policy.device,
        "precision": precision,
        "compile_mode": compile_mode,
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
    from .client import PolicyClient
    from .protocol import pack
    from .replay_policy import ReplayPolicy

    warmup = min(warmup, calls)
    backend = ReplayPolicy(np.zeros((16, 6), np.float32), horizon=16, cameras=cameras)
    rng = np.random.default_rng(0)
    obs = observation(
        {c: rng.integers(0, 255, (height, width, 3), dtype=np.uint8) for c in cameras},
        np.zeros(6, np.float32),
        "put the vial in the rack",
    )
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
            for precision, mode in CUDA_VARIANTS if cuda else (("fp32", ""),):
                try:
                    variants.append(inference_latency(synth, device, calls=calls, width=width, height=height,
                                                      precision=precision, compile_mode=mode))  # fmt: skip
                except Exception as exc:  # a variant that cannot run here is reported, not fatal
                    variants.append({"precision": precision, "compile_mode": mode, "error": f"{exc!r}"[:500]})
        measured = [v for v in variants if "inference_ms" in v]
        full = min(measured, key=lambda v: v["inference_ms"]["p99"])
        out["inference_full_resolution"] = full
        out["inference_variants"] = variants
        out["inference_ms_p99"] = full["inference_ms"]["p99"]
        out["inference_ms_p50"] = full["inference_ms"]["p50"]
        out["inference_serve_flags"] = f"--precision {full['precision']}" + (
            f" --compile {full['compile_mode']}" if full["compile_mode"] else ""
        )
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
