"""Driver benchmark over the Feetech emulator: the raw bus loop, the highest sustained loop rate at 1 Mbit/s
against its physical limit, the driver node's loop as ``joint_states`` subscribers see it, and the
command -> goal-on-the-bus latency.

Everything runs in this process (emulator thread, driver node, client node; a zenoh router as a child
process), so the GIL is shared by all of them: the figures are an upper bound of what a driver process on
real hardware sees, minus the wire time of a 1 Mbit/s bus (~0.3 ms per cycle).

Command -> goal latency: the client publishes a ``joint_commands`` target one small step (below the
per-cycle step limit) away from the present pose, at a random phase against the control loop; the latency
ends when the emulator parses the driver's sync write carrying the new Goal_Position (its goal log, stamped
in the emulator thread). It includes the zenoh hop and the driver's write on command arrival (no wait for
the next cycle). ``cold_command_to_bus_ms`` is the first command after start (the driver holding).
"""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from nodegraph.transport.zenoh.config import free_endpoint
from so101_core.robot_spec import JOINT_NAMES
from so101_hardware.calibration import ArmCalibration, save_calibration
from so101_hardware.example_calibration import EXAMPLE_FOLLOWER_CALIBRATION
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.bench import run_bus_benchmark, run_max_rate_benchmark
from so101_hardware.feetech.emulator import FeetechEmulator

POLL_S = 0.0005
GOAL_P99_MS = 3.0  # issue 13: command -> goal bytes on the bus, p99
STEP_RAD = 0.01  # alternate the pan target by this much (below robot.safety.max_step_rad: one cycle moves it)

_CALIBRATION = EXAMPLE_FOLLOWER_CALIBRATION


def _stats_ms(values_s: list[float] | np.ndarray) -> dict[str, float]:
    ms = np.asarray(values_s, dtype=np.float64) * 1e3
    if ms.size == 0:
        return {"p50": float("nan"), "p99": float("nan"), "max": float("nan")}
    return {
        "p50": round(float(np.percentile(ms, 50)), 3),
        "p99": round(float(np.percentile(ms, 99)), 3),
        "max": round(float(ms.max()), 3),
    }


def _wait(predicate: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(POLL_S)
    return True


def run_driver_benchmark(seconds: float = 5.0, rate_hz: float = 100.0, samples: int = 100) -> dict[str, Any]:
    """Measure the bus loop, the driver's ``joint_states`` stream for ``seconds``, and ``samples`` latencies.

    Returns:
        ``bus`` (:func:`run_bus_benchmark` for ``min(seconds, 5)`` s), ``joint_states`` (``received``,
        ``achieved_hz``, ``period_ms`` p50/p99/max at the subscriber), ``command_to_bus_ms`` (p50/p99/max),
        ``cold_command_to_bus_ms``, ``max_rate_1mbps`` (:func:`run_max_rate_benchmark`), ``latency_samples``,
        ``latency_timeouts`` and the settings.
    """
    if seconds <= 0 or rate_hz <= 0 or samples < 1:
        raise ValueError("seconds and rate_hz must be positive, samples >= 1")
    from nodegraph.transport.zenoh.context import Context
    from nodegraph.transport.zenoh.node import ZenohNode
    from nodegraph.transport.zenoh.router import RouterProcess
    from so101_nodes.driver_node import Driver

    bus = run_bus_benchmark(min(seconds, 5.0), rate_hz)
    max_rate = run_max_rate_benchmark(min(seconds, 3.0))
    calibration = ArmCalibration.from_dict(_CALIBRATION)
    endpoint = free_endpoint()
    with tempfile.TemporaryDirectory() as tmp, FeetechEmulator() as emu, RouterProcess(endpoint):
        cal_path = save_calibration(calibration, Path(tmp) / "follower.json")
        config = Path(tmp) / "robot.yaml"
        config.write_text(f"robot:\n  follower: {{id: bench, calibration: {cal_path}, bus: {{port: {emu.port}}}}}\n")
        for name in JOINT_NAMES:
            m = calibration[name]
            emu.write_register(m.id, p.HOMING_OFFSET, m.homing_offset)
            emu.write_register(m.id, p.MIN_POSITION_LIMIT, m.range_min)
            emu.write_register(m.id, p.MAX_POSITION_LIMIT, m.range_max)
            emu.set_present_position(m.id, round(m.mid))
        contexts = [Context(endpoint), Context(endpoint)]
        driver_node = client = driver = None
        try:
            if not all(ctx.wait_for_router(10.0) for ctx in contexts):
                raise RuntimeError(f"no zenoh router at {endpoint}")
            params = {"robot_config": str(config), "rate_hz": float(rate_hz)}
            driver_node = ZenohNode("driver", context=contexts[0], parameter_overrides=params)
            driver = Driver(driver_node)
            client = ZenohNode("driver_bench", context=contexts[1])
            lock = threading.Lock()
            arrivals: list[float] = []

            def on_state(_msg: Any) -> None:
                with lock:
                    arrivals.append(time.perf_counter())

            client.create_subscription("sensor_msgs/msg/JointState", "/joint_states", on_state)
            commands = client.create_publisher("sensor_msgs/msg/JointState", "/joint_commands")
            if not _wait(lambda: len(arrivals) > 10, 10.0):
                raise RuntimeError("the driver published no joint_states")
            with lock:
                arrivals.clear()
            time.sleep(seconds)
            with lock:
                stream = np.array(arrivals)

            pan = calibration["shoulder_pan"]
            latencies: list[float] = []
            cold: float | None = None
            timeouts = 0
            rng = np.random.default_rng(0)
            emu.record_goals()
            for i in range(samples + 1):
                target = STEP_RAD * (1 if i % 2 else -1)
                before = emu.read_register(pan.id, p.GOAL_POSITION)
                t0 = time.monotonic()
                commands.publish(client.message("sensor_msgs/msg/JointState", name=["shoulder_pan"], position=[target]))

                def changed(b: int = before, t: float = t0) -> list[float]:
                    return [ts for ts, _, g in emu.goal_history(pan.id) if ts >= t and g != b][:1]

                if _wait(lambda: bool(changed()), 1.0):
                    latency = changed()[0] - t0
                    if i:
                        latencies.append(latency)
                    else:
                        cold = latency
                else:
                    timeouts += 1
                emu.record_goals()  # keep the log short
                # settle (the servo reaches the goal), then a random phase against the control loop
                time.sleep(0.03 + float(rng.uniform(0.0, 1.0 / rate_hz)))
        finally:
            if driver_node is not None:
                driver_node.shutdown()
            if driver is not None:
                driver.close()
            if client is not None:
                client.shutdown()
            for ctx in contexts:
                ctx.close()
    periods = np.diff(stream) if stream.size > 1 else np.zeros(0)
    return {
        "seconds": seconds,
        "rate_hz": rate_hz,
        "bus": bus,
        "joint_states": {
            "received": int(stream.size),
            "achieved_hz": round((stream.size - 1) / float(stream[-1] - stream[0]), 2) if stream.size > 1 else 0.0,
            "period_ms": _stats_ms(periods),
        },
        "command_to_bus_ms": _stats_ms(latencies),
        "cold_command_to_bus_ms": round(cold * 1e3, 3) if cold is not None else None,
        "goal_command_to_bus_p99_ms": GOAL_P99_MS,
        "max_rate_1mbps": max_rate,
        "latency_samples": len(latencies),
        "latency_timeouts": timeouts,
    }
