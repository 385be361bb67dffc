"""``so101 calibrate``: calibrate a follower or leader arm and write LeRobot's calibration JSON; ``--check``
compares a stored calibration with what the arm reports now and says whether to recalibrate."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Literal

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table
from so101_core.joints import DEFAULT_SERVO_IDS
from so101_hardware.calibrate import calibrate_arm
from so101_hardware.calibration import (
    calibration_path,
    find_calibration,
    load_calibration,
    save_calibration,
)
from so101_hardware.calibration_check import ProbeSettings, check_calibration
from so101_hardware.errors import HardwareError
from so101_hardware.feetech.bus import BusConfig, FeetechBus

console = Console()
err_console = Console(stderr=True)


def _table(positions: dict[str, int]) -> Table:
    table = Table("joint", "position (counts)")
    for name, value in positions.items():
        table.add_row(name, str(value))
    return table


def calibrate(
    port: str = typer.Option(..., "--port", help="serial port of the arm's bus, e.g. /dev/ttyACM0"),
    robot_id: str = typer.Option(..., "--id", help="robot id: the calibration file is <id>.json"),
    role: str = typer.Option("follower", "--role", help="follower | leader"),
    out: Path = typer.Option(
        None, "--out", help="file to write; with --check, the file to check (default: LeRobot's calibration location)"
    ),
    baudrate: int = typer.Option(1_000_000, "--baudrate", help="bus baud rate"),
    check: bool = typer.Option(
        False,
        "--check",
        help="compare the stored calibration with the arm now; exit 0 when it matches, 3 when it should be redone",
    ),
    probe: bool = typer.Option(
        False,
        "--probe",
        help="with --check: MOVE each joint slowly to its calibrated ends "
        "under a torque limit, looking for its mechanical stops (follower only)",
    ),
    probe_torque: float = typer.Option(
        ProbeSettings.torque_limit,
        "--probe-torque",
        min=0.05,
        max=1.0,
        help="with --probe: torque limit, fraction of the servo's maximum",
    ),
    margin: int = typer.Option(33, "--margin", min=0, help="with --check: counts a joint may read outside its range"),
) -> None:
    """Torque off; put the arm in the middle of its range; move each joint through its range; Enter saves.
    With --check: read the servos' homing offsets, limits and positions (and with --probe the range ends) against
    the stored file, and say whether to recalibrate."""
    if role not in ("follower", "leader"):
        raise typer.BadParameter(f"--role must be follower or leader, got {role!r}")
    role_literal: Literal["follower", "leader"] = "follower" if role == "follower" else "leader"
    if check:
        if probe and role_literal == "leader":
            raise typer.BadParameter("--probe moves the arm under torque: the leader arm has none")
        _check(port, baudrate, out, robot_id, role_literal, probe, probe_torque, margin)
        return
    if probe:
        raise typer.BadParameter("--probe goes with --check")
    target = out or calibration_path(robot_id, role_literal)
    done = threading.Event()

    def wait_for_middle_pose() -> None:
        input("Move every joint to the middle of its range, then press Enter... ")
        console.print("Now move each joint through its whole range; press Enter when done.")
        threading.Thread(target=wait_for_enter, daemon=True).start()

    def wait_for_enter() -> None:
        input()
        done.set()

    try:
        with (
            FeetechBus(BusConfig(port, baudrate=baudrate), DEFAULT_SERVO_IDS.values()) as bus,
            Live(_table({}), console=console, transient=True, auto_refresh=False) as live,
        ):
            calibration = calibrate_arm(
                bus,
                DEFAULT_SERVO_IDS,
                wait_for_middle_pose=wait_for_middle_pose,
                range_done=done.is_set,
                on_positions=lambda positions: live.update(_table(positions), refresh=True),
            )
    except (HardwareError, EOFError) as exc:
        err_console.print(f"[red]so101 calibrate: {exc}[/red]", soft_wrap=True)
        raise typer.Exit(1) from exc
    path = save_calibration(calibration, target)
    console.print(f"calibration written to {path}", soft_wrap=True)


def _check(
    port: str,
    baudrate: int,
    out: Path | None,
    robot_id: str,
    role: Literal["follower", "leader"],
    probe: bool,
    probe_torque: float,
    margin: int,
) -> None:
    """``--check``: print each finding and the verdict; exit 0 (matches), 3 (recalibrate), 1 (cannot check)."""
    try:
        path = out or find_calibration(robot_id, role)
        calibration = load_calibration(path)
        with FeetechBus(BusConfig(port, baudrate=baudrate), calibration.ids.values()) as bus:
            if probe:
                console.print("probing the range ends: each joint moves slowly to both ends; keep clear (Ctrl-C stops)")
            settings = ProbeSettings(torque_limit=probe_torque)
            result = check_calibration(bus, calibration, margin_counts=margin, probe=probe, settings=settings)
    except (HardwareError, OSError) as exc:
        err_console.print(f"[red]so101 calibrate --check: {exc}[/red]", soft_wrap=True)
        raise typer.Exit(1) from exc
    table = Table("joint", "check", "", "detail", title=f"calibration {path}")
    for f in result.findings:
        table.add_row(f.joint, f.what, "[green]ok[/green]" if f.ok else "[red]differs[/red]", f.detail)
    console.print(table)
    console.print(result.verdict(), soft_wrap=True)
    if result.recalibrate:
        raise typer.Exit(3)
