"""``so101 calibrate`` as a user runs it, against the servo emulator on a pseudo-terminal: two Enter presses
(middle pose, end of the range sweep) produce a LeRobot calibration file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nodegraph.testing import wait_until
from so101_hardware.calibration import load_calibration
from so101_hardware.feetech import protocol as p
from so101_hardware.feetech.emulator import FeetechEmulator

MIDDLE = {1: 2000, 2: 2100, 3: 1900, 4: 2050, 5: 1000, 6: 2500}


def test_calibrate_command_writes_a_lerobot_file(emulator: FeetechEmulator, tmp_path: Path) -> None:
    for servo_id, counts in MIDDLE.items():
        emulator.set_present_position(servo_id, counts)
    out = tmp_path / "my_follower.json"
    command = [sys.executable, "-m", "so101_cli.main", "calibrate", "--port", emulator.port,
               "--id", "my_follower", "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    assert process.stdin is not None
    process.stdin.write("\n")  # the arm is in the middle pose (read when the command reaches its prompt)
    process.stdin.flush()
    wait_until(lambda: all(emulator.read_register(i, p.HOMING_OFFSET) == MIDDLE[i] - 2047 for i in MIDDLE), 30.0,
               "the command writing the homing offsets")  # fmt: skip
    for end in (1200, 2900):  # the user moves each joint to both ends (offsets now applied: ~2047 mid)
        for servo_id in (1, 2, 3, 4, 6):
            emulator.set_present_position(servo_id, end)
        # the command's range sweep reads all six servos per poll: two polls' replies hold one that began after the move
        replies = emulator.replies_sent
        wait_until(lambda r=replies: emulator.replies_sent >= r + 2 * len(MIDDLE), 30.0, f"a range poll at {end}")
    out_text, err_text = process.communicate("\n", timeout=30)
    assert process.returncode == 0, err_text
    assert f"calibration written to {out}" in out_text
    calibration = load_calibration(out)
    for name in ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "gripper"):
        motor = calibration.motors[name]
        assert motor.range_min <= 1200 and motor.range_max >= 2900, name
        assert motor.homing_offset == MIDDLE[motor.id] - 2047
    assert (calibration.motors["wrist_roll"].range_min, calibration.motors["wrist_roll"].range_max) == (0, 4095)


def test_calibrate_command_reports_a_missing_port(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "so101_cli.main", "calibrate", "--port", "/dev/nonexistent", "--id", "x",
         "--out", str(tmp_path / "x.json")],
        capture_output=True, text=True, timeout=60, input="",
    )  # fmt: skip
    assert done.returncode == 1
    assert "so101 calibrate" in done.stdout + done.stderr
    assert not (tmp_path / "x.json").exists()
