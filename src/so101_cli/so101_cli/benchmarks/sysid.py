"""System identification end to end on an emulated arm whose dynamics the fit does not know (``so101 bench sysid``).

The "real arm": the twin with hidden, perturbed dynamics (:func:`hidden_dynamics`: gains, damping, friction,
armature off the nominal, a dead band of a few counts, 20-40 ms latency) standing behind the Feetech emulator on
a pseudo-terminal (:class:`~so101_hardware.feetech.twin_plant.TwinPlant`), driven by the real driver node over
the bus, reached by the recorder over a real zenoh router: nothing on the way knows the hidden values.

The run: record the fit excitation, a held-out excitation (other chirp phases and band, steps reversed) and a
pick-and-place replay (the scripted expert's joint trajectory of one episode); identify the twin from the first;
replay the held-out two through the nominal and the identified twin. Reported: each hidden parameter's recovery
error (and whether it is inside :data:`~so101_core.sysid.validation.RECOVERY_TOLERANCES`), each joint's
uncertainty and residual, and ``heldout_tracking_error_ratio`` = identified / nominal tracking RMS on the
held-out recordings (goal ≤ 0.5).
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from nodegraph.transport.zenoh.config import free_endpoint
from so101_core.joints import twin_ranges
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sim.config import SimConfig, load_sim_config
from so101_core.sim.dynamics import PARAMETERS, ArmDynamics, nominal_dynamics
from so101_core.sysid.config import ExcitationConfig, SysidConfig, load_sysid_config
from so101_core.sysid.excitation import Clearance, Segment, pick_and_place_segment, plan_excitation, transit_segment
from so101_core.sysid.fit import COUNT_RAD, ArmFit, fit_arm
from so101_core.sysid.recording import check_recording
from so101_core.sysid.validation import RECOVERY_TOLERANCES, Comparison, pooled_ratio, tolerance, validate
from so101_hardware.calibration import ArmCalibration, save_calibration
from so101_hardware.example_calibration import EXAMPLE_FOLLOWER_CALIBRATION
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.emulator import FeetechEmulator
from so101_hardware.feetech.twin_plant import TwinPlant

ROBOT_ID = "emulated_so101"
MAX_STEP_RAD = 0.05
RATE_HZ = 100.0


def hidden_dynamics(nominal: ArmDynamics, seed: int = 0) -> ArmDynamics:
    """The emulated arm: each joint's gains, damping, friction and armature scaled by a draw in ±(20-50) %
    (``seed``), a dead band of 2-4 counts and a latency of 20-40 ms (one latency for the bus)."""
    rng = np.random.default_rng(seed)
    latency = float(rng.uniform(0.02, 0.04))
    joints = []
    for j in nominal.joints:

        def draw() -> float:
            return float(rng.choice([-1.0, 1.0]) * rng.uniform(0.2, 0.5))

        joints.append(
            replace(
                j,
                kp=j.kp * (1 + draw()),
                kv=j.kv * (1 + draw()),
                armature=j.armature * (1 + draw()),
                damping=j.damping * (1 + draw()),
                frictionloss=j.frictionloss * (1 + draw()),
                deadband=float(rng.uniform(2.0, 4.0)) * COUNT_RAD,
                latency_s=latency,
            )
        )
    return ArmDynamics(tuple(joints), "hidden")


@dataclass
class EmulatedArm:
    """The pieces of a running emulated arm (see :func:`emulated_arm`)."""

    endpoint: str
    emulator: FeetechEmulator
    plant: TwinPlant
    calibration: ArmCalibration
    robot_config: Path
    driver: Any


@contextlib.contextmanager
def emulated_arm(
    hidden: ArmDynamics,
    workdir: Path,
    *,
    q0: Any = None,
    endpoint: str | None = None,
    config: SimConfig | None = None,
) -> Iterator[EmulatedArm]:
    """A zenoh router (unless ``endpoint`` names a running one), the emulator with the twin of ``hidden`` behind
    it (starting at ``q0``, default the excitation base pose) and the driver node on it, in this process."""
    from nodegraph.transport.zenoh.context import Context
    from nodegraph.transport.zenoh.node import ZenohNode
    from nodegraph.transport.zenoh.router import RouterProcess
    from so101_nodes.driver_node import Driver

    calibration = ArmCalibration.from_dict(EXAMPLE_FOLLOWER_CALIBRATION)
    start = np.asarray(q0 if q0 is not None else ExcitationConfig().base_pose, dtype=np.float64)
    plant = TwinPlant(hidden, calibration, q0=start, config=config)
    with contextlib.ExitStack() as stack:
        if endpoint is None:
            endpoint = free_endpoint()
            stack.enter_context(RouterProcess(endpoint))
        emu = stack.enter_context(FeetechEmulator(plant=plant))
        for m in calibration.motors.values():
            emu.write_register(m.id, p.HOMING_OFFSET, m.homing_offset)
            emu.write_register(m.id, p.MIN_POSITION_LIMIT, m.range_min)
            emu.write_register(m.id, p.MAX_POSITION_LIMIT, m.range_max)
        cal_path = save_calibration(calibration, workdir / "follower.json")
        robot_yaml = workdir / "robot.yaml"
        robot_yaml.write_text(
            f"robot:\n  follower: {{id: {ROBOT_ID}, calibration: {cal_path}, shutdown: hold,\n"
            f"    bus: {{port: {emu.port}, timeout_ms: 50}}}}\n"  # generous: a loaded host delays the emulator
            f"  safety: {{max_step_rad: {MAX_STEP_RAD}, rate_hz: {RATE_HZ}}}\n"
        )
        ctx = Context(endpoint)
        stack.callback(ctx.close)
        if not ctx.wait_for_router(10.0):
            raise RuntimeError(f"no zenoh router at {endpoint}")
        node = ZenohNode("driver", context=ctx, parameter_overrides={"robot_config": str(robot_yaml)})
        driver = Driver(node)
        stack.callback(driver.close)
        stack.callback(node.shutdown)
        yield EmulatedArm(endpoint, emu, plant, calibration, robot_yaml, driver)


def record_segments(
    endpoint: str,
    bag: Path,
    segments: list[Segment],
    *,
    robot_id: str = ROBOT_ID,
    transit_to: Any = None,
    transit_speed: float = 0.5,
    on_segment: Callable[[Segment], None] | None = None,
) -> Path:
    """Record ``segments`` driven on the arm at ``endpoint`` into ``bag`` (after a transit to ``transit_to``,
    default the first segment's start)."""
    from nodegraph.transport.zenoh.context import Context
    from nodegraph.transport.zenoh.node import ZenohNode
    from so101_nodes.sysid_recorder import SysidRecorder, recorder_parameters

    ctx = Context(endpoint)
    node = ZenohNode("sysid_record", context=ctx, parameter_overrides=recorder_parameters(str(bag)))
    recorder = None
    try:
        recorder = SysidRecorder(node, robot_id)
        recorder.wait_ready()
        present = recorder.present()
        assert present is not None
        goal = transit_to if transit_to is not None else segments[0].positions[0]
        recorder.drive(transit_segment(present, goal, transit_speed))
        for seg in segments:
            if on_segment is not None:
                on_segment(seg)
            recorder.drive(seg)
    finally:
        if recorder is not None:
            recorder.close()
        node.shutdown()
        ctx.close()
    return bag


def heldout_excitation(cfg: ExcitationConfig) -> ExcitationConfig:
    """Another excitation than the fit's: other chirp phases, a higher band, steps reversed, smaller steps."""
    lo, hi = cfg.chirp_hz
    return replace(cfg, seed=cfg.seed + 1, chirp_hz=(lo * 1.5, hi * 1.25), amplitude=cfg.amplitude * 0.85)


def recovery(fit: ArmFit, hidden: ArmDynamics) -> dict[str, dict[str, Any]]:
    """Per joint and parameter: true, estimate, σ, error and whether it is inside its recovery tolerance."""
    out: dict[str, dict[str, Any]] = {}
    for joint, jf in fit.joints.items():
        true = hidden[joint]
        rows = {}
        for name in PARAMETERS:
            t, e = getattr(true, name), getattr(jf.estimate, name)
            tol = tolerance(name, t)
            rows[name] = {"true": _r(t), "estimate": _r(e), "sigma": _r(jf.sigma[name]), "error": _r(e - t),
                          "relative_error": _r((e - t) / t) if t else None, "tolerance": _r(tol),
                          "within": bool(abs(e - t) <= tol)}  # fmt: skip
        out[joint] = rows
    return out


def _r(x: float) -> float:
    return float(f"{x:.4g}") if math.isfinite(x) else float(x)


def run_sysid_benchmark(
    workdir: Path | None = None,
    *,
    joints: tuple[str, ...] = JOINT_NAMES,
    seed: int = 0,
    settings: SysidConfig | None = None,
    replay: bool = True,
    report_dir: Path | None = None,
    reuse: bool = False,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Record, fit and validate on the emulated arm (see the module docstring); returns the JSON result.
    ``reuse``: bags already in ``workdir`` (of the same seed and joints) are not recorded again."""
    from so101_nodes.sysid_bag import load_recording

    cfg = load_sim_config()
    sysid = settings or load_sysid_config()
    nominal = nominal_dynamics(cfg)
    hidden = hidden_dynamics(nominal, seed)
    excitation = replace(sysid.excitation, joints=joints)
    ranges = twin_ranges()
    clearance = Clearance(cfg)
    speed = MAX_STEP_RAD * RATE_HZ
    timings: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        work = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        work.mkdir(parents=True, exist_ok=True)
        fit_plan = plan_excitation(excitation, ranges.lower, ranges.upper, speed, clearance)
        held_plan = plan_excitation(heldout_excitation(excitation), ranges.lower, ranges.upper, speed, clearance)
        bags = {"fit": work / "fit_bag", "heldout_excitation": work / "heldout_bag"}
        plans = {"fit": fit_plan, "heldout_excitation": held_plan}
        if replay:
            bags["heldout_pick_and_place"] = work / "pick_place_bag"
            plans["heldout_pick_and_place"] = [pick_and_place_segment(cfg, seed)]
        todo = {k: v for k, v in plans.items() if not (reuse and (bags[k] / "metadata.yaml").is_file())}
        with contextlib.ExitStack() as arm_stack:
            arm = arm_stack.enter_context(emulated_arm(hidden, work, config=cfg)) if todo else None
            for name, plan in todo.items():
                assert arm is not None
                t0 = time.monotonic()
                log(f"recording {name} ({sum(s.duration_s for s in plan):.0f} s of trajectory)")
                record_segments(arm.endpoint, bags[name], plan, transit_to=plan[0].positions[0],
                                transit_speed=excitation.transit_speed)  # fmt: skip
                timings[f"record_{name}_s"] = round(time.monotonic() - t0, 1)
        recordings = {name: load_recording(path) for name, path in bags.items()}
        limits = np.array([a.force_limit for a in cfg.robot.actuators])
        check_recording(recordings["fit"], joints, limits, sysid.checks)
        t0 = time.monotonic()
        log("fitting")
        fit = fit_arm([recordings["fit"]], cfg, nominal, sysid.fit, joints,
                      on_joint=lambda jf: log(f"  {jf.joint}: position RMS {jf.position_rms:.4f} rad"))  # fmt: skip
        timings["fit_s"] = round(time.monotonic() - t0, 1)
        identified = fit.dynamics(sysid.fit.significance, ROBOT_ID)
        held = {k: v for k, v in recordings.items() if k != "fit"}
        comparisons = validate(held, cfg, nominal, identified)
        ratio = pooled_ratio(comparisons)
    if report_dir is not None:
        from so101_cli.sysid_report import write_report

        write_report(report_dir, comparisons, fit, title="Emulated SO-101: nominal vs identified twin",
                     significance=sysid.fit.significance, registers=cfg.robot.servo_registers)  # fmt: skip
    rec = recovery(fit, hidden)
    within = [row["within"] for rows in rec.values() for row in rows.values()]
    return {
        "heldout_tracking_error_ratio": round(ratio, 4),
        "goal_heldout_tracking_error_ratio_max": 0.5,
        "recovered_within_tolerance": f"{sum(within)}/{len(within)}",
        "tolerances": {k: {"relative": r, "absolute": a} for k, (r, a) in RECOVERY_TOLERANCES.items()},
        "recovery": rec,
        "heldout": _comparisons(comparisons),
        "fit_residual": {j: jf.summary()["residual"] for j, jf in fit.joints.items()},
        "hidden_latency_s": _r(hidden.joints[0].latency_s),
        "joints": list(joints),
        "seed": seed,
        "timings": timings,
    }


def _comparisons(comparisons: list[Comparison]) -> dict[str, Any]:
    out = {}
    for c in comparisons:
        out[c.name] = {
            "ratio": round(c.ratio, 4),
            "duration_s": round(c.recording.duration_s, 1),
            "nominal_rms_rad": dict(zip(JOINT_NAMES, np.round(c.nominal_error.rms, 5).tolist(), strict=True)),
            "identified_rms_rad": dict(zip(JOINT_NAMES, np.round(c.identified_error.rms, 5).tolist(), strict=True)),
            "nominal_max_rad": dict(zip(JOINT_NAMES, np.round(c.nominal_error.max, 5).tolist(), strict=True)),
            "identified_max_rad": dict(zip(JOINT_NAMES, np.round(c.identified_error.max, 5).tolist(), strict=True)),
        }
    return out
