"""``so101 sysid record | fit | report`` and ``so101 calibrate --check`` as a user runs them, against an emulated arm:
the twin with hidden dynamics behind the Feetech emulator, the real driver node, a real zenoh router."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from nodegraph.transport.zenoh.router import RouterProcess
from so101_cli.benchmarks.sysid import emulated_arm, hidden_dynamics
from so101_cli.main import app
from so101_core.sim.config import load_sim_config
from so101_core.sim.dynamics import arm_dynamics, nominal_dynamics
from so101_hardware.calibration import save_calibration
from so101_hardware.feetech import protocol as p
from typer.testing import CliRunner

JOINT = "wrist_flex"


def short_excitation(path: Path) -> Path:
    """One joint, one step each way and a 3 s chirp at 60 % of the step limit (the full excitation is
    `so101 bench sysid`'s): a busy test host delays the driver's loop, and the arm then lags its goal more."""
    excitation = {"joints": [JOINT], "step_fractions": [1.0], "hold_s": 0.4, "chirp_s": 3.0, "taper_s": 0.3,
                  "speed_fraction": 0.6}  # fmt: skip
    path.write_text(yaml.safe_dump({"excitation": excitation}))
    return path


@pytest.mark.slow
def test_record_fit_and_report_identify_an_emulated_arm(router: RouterProcess, tmp_path: Path) -> None:
    sim = load_sim_config()
    hidden = hidden_dynamics(nominal_dynamics(sim), seed=3)
    config = short_excitation(tmp_path / "sysid.yaml")
    bag, arm_file = tmp_path / "bag", tmp_path / "arms" / "lab_arm.yaml"
    runner = CliRunner()
    with emulated_arm(hidden, tmp_path, endpoint=router.endpoint) as arm:
        recorded = runner.invoke(app, ["sysid", "record", "--out", str(bag), "--config", str(config),
                                       "--robot-id", "lab_arm", "--robot-config", str(arm.robot_config)])  # fmt: skip
    assert recorded.exit_code == 0, (recorded.output, recorded.exception)
    assert "recorded" in recorded.output

    fitted = runner.invoke(app, ["sysid", "fit", str(bag), "--out", str(arm_file), "--config", str(config)])
    assert fitted.exit_code == 0, (fitted.output, fitted.exception)
    twin = arm_dynamics("lab_arm", sim, arm_file)  # what a launch with robot_id:=lab_arm loads
    assert twin is not None
    nominal, true, got = nominal_dynamics(sim), hidden[JOINT], twin[JOINT]
    # a short excitation on a loaded host: looser than the benchmark's tolerances, far tighter than the nominal's
    assert abs(got.latency_s - true.latency_s) < 0.008 < abs(nominal[JOINT].latency_s - true.latency_s), got
    assert abs(got.kp - true.kp) < 0.15 * true.kp < abs(nominal[JOINT].kp - true.kp), got
    assert twin["elbow_flex"] == nominal["elbow_flex"]  # not excited: nominal
    fit_section = yaml.safe_load(arm_file.read_text())["fit"]
    assert fit_section["servo_temperature_c"][JOINT] == [30.0, 30.0]  # the emulator's servos, from /diagnostics
    evidence = fit_section["joints"][JOINT]
    assert set(evidence["parameters"]["kp"]) == {"estimate", "sigma", "nominal"}
    residual = evidence["residual"]
    assert residual["position_rms_rad"] < 0.5 * residual["nominal_position_rms_rad"]

    wrong = runner.invoke(app, ["sysid", "fit", str(bag), "--out", str(tmp_path / "x.yaml"), "--joints",
                                "elbow_flex", "--config", str(config)])  # fmt: skip
    assert wrong.exit_code == 1
    assert "elbow_flex was never excited" in wrong.output and not (tmp_path / "x.yaml").exists()

    report = runner.invoke(app, ["sysid", "report", str(bag), "--arm", str(arm_file), "--out", str(tmp_path / "r")])
    assert report.exit_code == 0, (report.output, report.exception)
    page = (tmp_path / "r" / "index.html").read_text()
    assert f"<td>bag</td><td>{JOINT}</td>" in page and (tmp_path / "r" / "summary.png").stat().st_size > 1000
    assert "identified / nominal: " in report.output  # held-out figures are the benchmark's


def test_calibrate_check_says_when_to_recalibrate(tmp_path: Path) -> None:
    from so101_hardware.calibration import ArmCalibration
    from so101_hardware.example_calibration import EXAMPLE_FOLLOWER_CALIBRATION
    from so101_hardware.feetech.emulator import FeetechEmulator

    cal = ArmCalibration.from_dict(EXAMPLE_FOLLOWER_CALIBRATION)
    path = save_calibration(cal, tmp_path / "lab_arm.json")
    runner = CliRunner()
    with FeetechEmulator() as emu:
        for m in cal.motors.values():
            emu.write_register(m.id, p.HOMING_OFFSET, m.homing_offset)
            emu.write_register(m.id, p.MIN_POSITION_LIMIT, m.range_min)
            emu.write_register(m.id, p.MAX_POSITION_LIMIT, m.range_max)
            emu.set_present_position(m.id, round(m.mid))
        args = ["calibrate", "--check", "--port", emu.port, "--id", "lab_arm", "--out", str(path)]
        ok = runner.invoke(app, args)
        assert ok.exit_code == 0, ok.output
        assert "the calibration matches the arm" in ok.output
        emu.set_present_position(cal["shoulder_lift"].id, cal["shoulder_lift"].range_min - 200)
        bad = runner.invoke(app, args)
        assert bad.exit_code == 3, bad.output
        assert "recalibrate: shoulder_lift" in bad.output
    gone = runner.invoke(app, ["calibrate", "--check", "--port", "/dev/nonexistent", "--id", "x", "--out", str(path)])
    assert gone.exit_code == 1 and "so101 calibrate --check" in gone.output
