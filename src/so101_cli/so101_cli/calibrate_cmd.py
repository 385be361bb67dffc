"""``so101 calibrate``: calibrate a follower or leader arm and write LeRobot's calibration JSON."""

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
from so101_hardware.calibration import calibration_path, save_calibration
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
    out: Path = typer.Option(None, "--out", help="file to write (default: LeRobot's calibration location)"),
    baudrate: int = typer.Option(1_000_000, "--baudrate", help="bus baud rate"),
) -> None:
    """Torque off; put the arm in the middle of its range; move each joint through its range; Enter saves."""
    if role not in ("follower", "leader"):
        raise typer.BadParameter(f"--role must be follower or leader, got {role!r}")
    role_literal: Literal["follower", "leader"] = "follower" if role == "follower" else "leader"
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
