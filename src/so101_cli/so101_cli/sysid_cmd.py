"""``so101 sysid record | fit | report``: identify an arm's twin (servo gains, friction, armature, dead band,
latency) from recordings of its excitation, and show how much closer to the arm it is than the nominal twin."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import NoReturn

import numpy as np
import typer
from rich.console import Console

app = typer.Typer(help="System identification of an arm's twin (config/arms/<id>.yaml).", no_args_is_help=True)
console = Console(stderr=True)


def _fail(message: str, code: int = 1) -> NoReturn:
    console.print(f"[red]so101 sysid:[/red] {message}", soft_wrap=True)
    raise typer.Exit(code)


def _joints(text: str) -> tuple[str, ...]:
    from so101_core.robot_spec import JOINT_NAMES

    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in JOINT_NAMES]
    if unknown or not names:
        raise typer.BadParameter(f"joints must be names of {list(JOINT_NAMES)}, got {list(names)}")
    return names


def _limits(robot_config: str, calibration: str) -> tuple[np.ndarray, np.ndarray, float]:
    """(lower, upper) (6,) rad the driver enforces (the calibration's range ∩ the twin's when the follower's
    calibration is found, else the twin's) and the command filter's step limit as a speed (rad/s)."""
    from so101_core.control.safety import SafetyConfig
    from so101_core.joints import twin_ranges
    from so101_hardware.calibration import ArmConverter
    from so101_hardware.errors import HardwareError
    from so101_nodes.arm_link import load_arm

    ranges = twin_ranges()
    lower, upper = np.array(ranges.lower), np.array(ranges.upper)
    safety = SafetyConfig()
    try:
        entry, cal, config = load_arm(robot_config, "", calibration)
        safety = config.safety
        lo, hi = ArmConverter.build(cal, ranges, entry.arm.signs, entry.arm.offsets_rad).limits()
        lower, upper = np.maximum(lower, lo), np.minimum(upper, hi)
        console.print(f"limits: the calibration of {entry.robot_id} within the twin's ranges")
    except (HardwareError, ValueError, OSError) as exc:
        console.print(f"limits: the twin's joint ranges (no follower calibration: {exc})", soft_wrap=True)
    return lower, upper, safety.max_speed_rad_s


@app.command()
def record(
    out: Path = typer.Option(..., "--out", "-o", help="bag directory to write (must not exist)"),
    robot_id: str = typer.Option("", "--robot-id", help="the arm's id, written into the bag (default: robot.yaml's)"),
    joints: str = typer.Option("", "--joints", help="joints to excite, comma-separated (default: sysid.yaml's)"),
    seed: int | None = typer.Option(None, "--seed", help="chirp phases (a held-out recording takes another seed)"),
    replay: Path | None = typer.Option(
        None,
        "--replay",
        help="instead of the excitation, replay this joint trajectory (.npy, (T, 6) rad at sim.yaml's control rate)",
    ),
    pick_and_place: bool = typer.Option(
        False,
        "--pick-and-place",
        help="instead of the excitation, replay the scripted expert's pick-and-place "
        "of episode --seed (held-out data for `so101 sysid report`)",
    ),
    config: Path | None = typer.Option(None, "--config", help="sysid YAML (default config/sysid.yaml)"),
    robot_config: str = typer.Option("", "--robot-config", help="robot.yaml for the limits (default the config's)"),
    calibration: str = typer.Option("", "--calibration", help="the follower's LeRobot calibration JSON"),
    timeout_s: float = typer.Option(30.0, "--timeout", help="wait this long for the arm on the graph, s"),
) -> None:
    """Drive the arm (real, or the twin) through per-joint steps and chirps inside its limits, at the command
    filter's step limit, jaw open, via arm_controller/follow_joint_trajectory; record joint_states,
    controller_state, /diagnostics and the segment marks to a bag."""
    from so101_core.sim.config import load_sim_config
    from so101_core.sysid.config import load_sysid_config
    from so101_core.sysid.errors import SysidError
    from so101_core.sysid.excitation import (
        Clearance,
        pick_and_place_segment,
        plan_excitation,
        replay_segment,
        transit_segment,
    )
    from so101_nodes.sysid_recorder import SysidRecorder, SysidRecordError, recorder_parameters

    from so101_cli.common import cli_node

    if out.exists():
        raise typer.BadParameter(f"{out} exists already; a bag is never overwritten")
    try:
        settings = load_sysid_config(config)
        excitation = settings.excitation
        if joints:
            excitation = replace(excitation, joints=_joints(joints))
        if seed is not None:
            excitation = replace(excitation, seed=seed)
        lower, upper, speed = _limits(robot_config, calibration)
        if pick_and_place:
            plan = [pick_and_place_segment(load_sim_config(), excitation.seed)]
        elif replay is not None:
            plan = [replay_segment(np.load(replay), 1.0 / load_sim_config().physics.control_hz)]
        else:
            plan = plan_excitation(excitation, lower, upper, speed, Clearance(load_sim_config()))
    except (SysidError, ValueError, OSError) as exc:
        _fail(str(exc))
    if not robot_id:
        try:
            from so101_nodes.arm_link import load_arm

            robot_id = load_arm(robot_config, "", calibration)[0].robot_id
        except Exception:  # no robot.yaml / calibration: the bag simply names no arm
            robot_id = ""
    total = sum(s.duration_s for s in plan)
    console.print(f"{len(plan)} segments, {total:.0f} s of motion; keep the workspace clear (Ctrl-C stops)")
    with cli_node("sysid_record", recorder_parameters(str(out))) as node:
        recorder = SysidRecorder(node, robot_id)
        try:
            recorder.wait_ready(timeout_s)
            present = recorder.present()
            assert present is not None
            recorder.drive(transit_segment(present, plan[0].positions[0], excitation.transit_speed))
            for seg in plan:
                console.print(f"  {seg.kind} {seg.joint or ''} ({seg.duration_s:.1f} s)")
                recorder.drive(seg)
        except SysidRecordError as exc:
            recorder.close()
            _fail(f"{exc} (the bag so far is in {out})")
        except KeyboardInterrupt:
            recorder.close()
            _fail(f"interrupted (the bag so far is in {out})", 130)
        recorder.close()
    stats = recorder.recorder.writer.stats()
    typer.echo(f"recorded {stats.written} messages to {out} ({stats.dropped} dropped)")


@app.command()
def fit(
    bags: list[Path] = typer.Argument(..., help="sysid bags of the arm (so101 sysid record)"),
    out: Path = typer.Option(..., "--out", "-o", help="the per-arm file to write, config/arms/<id>.yaml"),
    robot_id: str = typer.Option("", "--robot-id", help="the arm's id (default: the bags', else the file name)"),
    joints: str = typer.Option("", "--joints", help="joints to identify (default: sysid.yaml's excitation joints)"),
    config: Path | None = typer.Option(None, "--config", help="sysid YAML (default config/sysid.yaml)"),
) -> None:
    """Fit each joint's position-loop gain and damping, armature, Coulomb and viscous friction, dead band and
    latency (± 1σ, with residuals); write the values that differ from the nominal twin to OUT."""
    import datetime as dt

    from so101_core.robot_spec import JOINT_NAMES
    from so101_core.sim.config import load_sim_config
    from so101_core.sim.dynamics import nominal_dynamics, save_arm_dynamics
    from so101_core.sysid.config import load_sysid_config
    from so101_core.sysid.errors import SysidError
    from so101_core.sysid.fit import fit_arm
    from so101_core.sysid.recording import check_recording
    from so101_nodes.sysid_bag import load_recording

    try:
        settings = load_sysid_config(config)
        names = _joints(joints) if joints else settings.excitation.joints
        sim = load_sim_config()
        recordings = [load_recording(b) for b in bags]
        limits = np.array([a.force_limit for a in sim.robot.actuators])
        for rec in recordings:
            check_recording(rec, names, limits, settings.checks)
        arm_id = robot_id or next((r.robot_id for r in recordings if r.robot_id), "") or out.stem
        nominal = nominal_dynamics(sim)
        console.print(f"identifying {', '.join(names)} of {arm_id} from {len(bags)} bag(s)")
        result = fit_arm(recordings, sim, nominal, settings.fit, names, on_joint=lambda jf: console.print(
            f"  {jf.joint}: position RMS {jf.position_rms:.4f} rad (nominal {jf.nominal_position_rms:.4f}), "
            f"latency {jf.estimate.latency_s * 1e3:.1f} ms"))  # fmt: skip
        dynamics = result.dynamics(settings.fit.significance, arm_id)
    except SysidError as exc:
        _fail(str(exc))
    temps = np.vstack([r.temperatures for r in recordings])
    summary = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "bags": [str(b) for b in bags],
        "servo_temperature_c": {
            name: [float(np.nanmin(temps[:, j])), float(np.nanmax(temps[:, j]))]
            for j, name in enumerate(JOINT_NAMES)
            if temps.size and np.any(np.isfinite(temps[:, j]))
        },
        "significance_sigma": settings.fit.significance,
        "joints": {name: jf.summary(sim.robot.servo_registers) for name, jf in result.joints.items()},
    }
    header = (
        f"Identified twin of the SO-101 follower {arm_id!r} (so101 sysid fit). 'joints' is what the twin loads;\n"
        "the rest of each joint is the nominal twin (sim.yaml + MJCF). 'fit' is the evidence."
    )
    path = save_arm_dynamics(out, dynamics, nominal, summary, header)
    typer.echo(f"wrote {path} ({sum(len(v) for v in dynamics.overrides(nominal).values())} values differ from nominal)")


@app.command()
def report(
    bags: list[Path] = typer.Argument(..., help="held-out bags (not used by the fit)"),
    arm: Path = typer.Option(..., "--arm", help="the per-arm file of so101 sysid fit"),
    out: Path = typer.Option(Path("sysid_report"), "--out", "-o", help="report directory (index.html)"),
) -> None:
    """Tracking error (RMS, max per joint) of the nominal and the identified twin on held-out recordings: a table
    and overlaid plots in an HTML report."""
    from so101_core.sim.config import load_sim_config
    from so101_core.sim.dynamics import load_arm_dynamics, nominal_dynamics
    from so101_core.sysid.errors import SysidError
    from so101_core.sysid.validation import pooled_ratio, validate
    from so101_nodes.sysid_bag import load_recording

    from so101_cli.sysid_report import write_report

    try:
        sim = load_sim_config()
        nominal = nominal_dynamics(sim)
        identified = load_arm_dynamics(arm, nominal)
        recordings = {b.name: load_recording(b) for b in bags}
        comparisons = validate(recordings, sim, nominal, identified)
    except (SysidError, ValueError) as exc:
        _fail(str(exc))
    page = write_report(out, comparisons, title=f"Twin of {identified.robot_id}: nominal vs identified",
                        arm_file=str(arm))  # fmt: skip
    for c in comparisons:
        typer.echo(f"{c.name}: tracking RMS nominal {c.nominal_error.pooled:.4f} rad, identified "
                   f"{c.identified_error.pooled:.4f} rad (ratio {c.ratio:.3f})")  # fmt: skip
    typer.echo(f"identified / nominal: {pooled_ratio(comparisons):.3f}; report: {page}")
