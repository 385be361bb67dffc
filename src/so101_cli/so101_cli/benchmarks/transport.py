"""``so101 bench transport [--transport zenoh|rclpy]``: three 640×480 rgb8 streams at 30 Hz plus JointState at
100 Hz, each publisher in its own process, received by a latency probe and recorded to MCAP by the recorder node;
on zenoh, then the same load through raw eclipse-zenoh put/subscribe as the baseline.

Reported: ``drops`` (sent − received by the probe, per topic and total), ``recorded_drops`` (sent − messages
in the bag), latency percentiles (ms, receive time − the publisher's source timestamp: the rmw_zenoh
attachment's on zenoh, DDS's on rclpy) and, on zenoh, ``baseline_latency_ms_p99``. The rclpy run uses
``$ROS_DOMAIN_ID`` with discovery on this host (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` unless set) and
Fast DDS (rmw_fastrtps_cpp, the wheels' middleware); its figures go under the key ``rclpy`` of the result file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from nodegraph.transport.runtime import ENV as TRANSPORT_ENV
from nodegraph.transport.zenoh.config import ENDPOINT_ENV
from nodegraph.transport.zenoh.router import RouterProcess

CAMERAS = ("ego", "side", "top")
WORKER = "so101_cli.benchmarks.transport_worker"
SETTLE_S = 3.0


def _spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)


def _wait_ready(process: subprocess.Popen[str], timeout_s: float = 20.0) -> None:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("READY"):
            return
        if not line and process.poll() is not None:
            raise RuntimeError("benchmark probe exited before it was ready")
    raise RuntimeError("benchmark probe not ready in time")


def _last_json(process: subprocess.Popen[str], timeout_s: float = 30.0) -> dict[str, Any]:
    out, _ = process.communicate(timeout=timeout_s)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"benchmark worker printed no result (exit {process.returncode})")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    array = np.asarray(values)
    return {
        "p50": round(float(np.percentile(array, 50)), 3),
        "p99": round(float(np.percentile(array, 99)), 3),
        "max": round(float(array.max()), 3),
    }


def _run_load(seconds: float, env: dict[str, str], raw: bool, bag_dir: Path | None) -> dict[str, Any]:
    topics = [f"/cameras/{c}/image_raw" for c in CAMERAS] + ["/joint_states"]
    flag = ["--raw"] if raw else []
    probe = _spawn([sys.executable, "-m", WORKER, *flag, "probe", *topics], env)
    recorder = None
    try:
        _wait_ready(probe)
        if bag_dir is not None:
            recorder = subprocess.Popen(
                [sys.executable, "-m", "so101_nodes.recorder_node", "--ros-args",
                 "-p", f"topics:={json.dumps(topics)}", "-p", f"output:={bag_dir}"],
                env=env,
            )  # fmt: skip
            time.sleep(SETTLE_S)
        subs = str(1 + (bag_dir is not None))  # the probe and the recorder
        publishers = [
            _spawn([sys.executable, "-m", WORKER, *flag, "image", c, str(seconds), subs], env) for c in CAMERAS
        ]
        publishers.append(_spawn([sys.executable, "-m", WORKER, *flag, "joints", str(seconds), subs], env))
        results = [_last_json(p, seconds + 60) for p in publishers]
        sent = {r["topic"]: r["sent"] for r in results}
        discovery = {r["topic"]: r["discovery_s"] for r in results if "discovery_s" in r}
        time.sleep(1.0)
    finally:
        for process in (probe, recorder):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)
    probed = _last_json(probe)
    if recorder is not None:
        recorder.wait(timeout=60)
    received = probed["received"]
    all_latencies = [v for values in probed["latencies_ms"].values() for v in values]
    drops = {t: sent.get(t, 0) - received.get(t, 0) for t in topics}
    return {
        "sent": sent,
        "received": received,
        "drops": {**drops, "total": sum(drops.values())},
        "latency_ms": _percentiles(all_latencies),
        "latency_ms_per_topic": {t: _percentiles(v) for t, v in probed["latencies_ms"].items()},
        "discovery_s": discovery,
    }


def _recorded_counts(bag_dir: Path) -> dict[str, int]:
    from nodegraph.bag.reader import info

    return {topic.name: topic.message_count for topic in info(bag_dir).topics}


LOAD = "3 x 640x480 rgb8 @ 30 Hz + JointState @ 100 Hz, one process per publisher"


def run_rclpy_transport_benchmark(seconds: float = 10.0) -> dict[str, Any]:
    """The graph load on rclpy nodes (no baseline); returns the result dict (the ``rclpy`` section)."""
    env = {**os.environ, TRANSPORT_ENV: "rclpy", "PYTHONUNBUFFERED": "1"}
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    with tempfile.TemporaryDirectory() as tmp:
        bag_dir = Path(tmp) / "bench_bag"
        graph = _run_load(seconds, env, raw=False, bag_dir=bag_dir)
        recorded = _recorded_counts(bag_dir)
    recorded_drops = {t: graph["sent"].get(t, 0) - recorded.get(t, 0) for t in graph["sent"]}
    return {
        "rmw": env.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp"),
        "ros_domain_id": int(env.get("ROS_DOMAIN_ID", "0") or 0),
        "seconds": seconds,
        "load": LOAD,
        "sent": graph["sent"],
        "drops": graph["drops"],
        "recorded": recorded,
        "recorded_drops": {**recorded_drops, "total": sum(recorded_drops.values())},
        "latency_ms_p50": graph["latency_ms"]["p50"],
        "latency_ms_p99": graph["latency_ms"]["p99"],
        "latency_ms_max": graph["latency_ms"]["max"],
        "latency_ms_per_topic": graph["latency_ms_per_topic"],
        "discovery_s": graph["discovery_s"],
    }


def run_transport_benchmark(seconds: float = 10.0, port: int = 17447) -> dict[str, Any]:
    """Run both loads against a fresh router on 127.0.0.1:``port``; returns the result dict."""
    endpoint = f"tcp/127.0.0.1:{port}"
    env = {**os.environ, ENDPOINT_ENV: endpoint, TRANSPORT_ENV: "zenoh", "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryDirectory() as tmp, RouterProcess(endpoint):
        bag_dir = Path(tmp) / "bench_bag"
        graph = _run_load(seconds, env, raw=False, bag_dir=bag_dir)
        recorded = _recorded_counts(bag_dir)
        baseline = _run_load(seconds, env, raw=True, bag_dir=None)
    recorded_drops = {t: graph["sent"].get(t, 0) - recorded.get(t, 0) for t in graph["sent"]}
    p99, base_p99 = graph["latency_ms"]["p99"], baseline["latency_ms"]["p99"]
    return {
        "seconds": seconds,
        "load": LOAD,
        "sent": graph["sent"],
        "drops": graph["drops"],
        "recorded": recorded,
        "recorded_drops": {**recorded_drops, "total": sum(recorded_drops.values())},
        "latency_ms_p50": graph["latency_ms"]["p50"],
        "latency_ms_p99": p99,
        "latency_ms_max": graph["latency_ms"]["max"],
        "latency_ms_per_topic": graph["latency_ms_per_topic"],
        "baseline_drops": baseline["drops"],
        "baseline_latency_ms_p50": baseline["latency_ms"]["p50"],
        "baseline_latency_ms_p99": base_p99,
        "p99_vs_baseline": round(p99 / base_p99, 2) if base_p99 else None,
        "goals": {"drops": 0, "latency_ms_p99_max": 20.0, "p99_vs_baseline_max": 2.0},
    }
