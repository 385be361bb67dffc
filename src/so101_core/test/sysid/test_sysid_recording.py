"""A recording that cannot identify the twin is refused with an error naming what is missing: too short, a joint
that never moved or was never excited, an effort stuck at its limit, a gap in the stream, a topic missing."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from so101_core.sysid.arm_sim import Commands
from so101_core.sysid.config import CheckConfig
from so101_core.sysid.errors import RecordingError
from so101_core.sysid.recording import Mark, Recording, check_recording

LIMITS = np.full(6, 3.35)
CHECKS = CheckConfig()


def good() -> Recording:
    """10 s at 100 Hz: elbow_flex swings 0.3 rad under a moderate effort, marked as excited."""
    t = np.arange(0.0, 10.0, 0.01)
    q = np.zeros((t.size, 6))
    q[:, 2] = 0.3 * np.sin(2 * np.pi * 0.5 * t)
    effort = np.full((t.size, 6), 0.1)
    return Recording(t, q, np.gradient(q, t, axis=0), effort, Commands(t + 0.001, q.copy()),
                     (Mark("elbow_flex", "chirp", 0.0, 10.0),), source="bag_x")  # fmt: skip


def refused(rec: Recording, joints: tuple[str, ...] = ("elbow_flex",)) -> str:
    with pytest.raises(RecordingError) as info:
        check_recording(rec, joints, LIMITS, CHECKS)
    assert str(info.value).startswith("bag_x")
    return str(info.value)


def test_a_good_recording_passes() -> None:
    check_recording(good(), ("elbow_flex",), LIMITS, CHECKS)


def test_too_short() -> None:
    rec = good()
    keep = rec.times < 2.0
    short = replace(rec, times=rec.times[keep], positions=rec.positions[keep], velocities=rec.velocities[keep],
                    efforts=rec.efforts[keep])  # fmt: skip
    assert "it is 2.0 s long, shorter than the 4 s needed" in refused(short)


def test_a_joint_never_moved_or_never_excited() -> None:
    rec = good()
    still = rec.positions.copy()
    still[:, 2] = 0.001
    assert "elbow_flex never moved (0.000 rad" in refused(replace(rec, positions=still))
    assert "wrist_flex was never excited" in refused(rec, ("elbow_flex", "wrist_flex"))


def test_saturated_current() -> None:
    rec = good()
    effort = rec.efforts.copy()
    effort[:300, 2] = -3.35
    assert "elbow_flex saturated: its effort sat at the 3.35 N·m limit in 30% of its samples" in refused(
        replace(rec, efforts=effort)
    )


def _cut(rec: Recording, states: bool, goals: bool, t0: float = 4.0, t1: float = 4.5) -> Recording:
    keep = (rec.times < t0) | (rec.times > t1)
    if states:
        rec = replace(rec, times=rec.times[keep], positions=rec.positions[keep], velocities=rec.velocities[keep],
                      efforts=rec.efforts[keep])  # fmt: skip
    if goals:  # each goal is written 1 ms after its read: the same cycles go
        c = rec.commands
        rec = replace(rec, commands=Commands(c.times[keep], c.targets[keep]))
    return rec


def test_a_gap_that_lost_data_and_a_servo_that_did_not_answer() -> None:
    rec = good()
    message = refused(_cut(rec, states=True, goals=False))
    assert (
        "a gap of 0.52 s in joint_states at t = 3.99 s (the measurements are missing while goals were sent)" in message
    )
    message = refused(_cut(rec, states=False, goals=True))
    assert "a gap of 0.52 s in arm_controller/controller_state at t = 3.99 s (the goal moved 0.309 rad" in message
    message = refused(_cut(rec, states=True, goals=True))  # both lost while the goal kept moving
    assert "(the goal moved 0.309 rad across it: the goals sent during it are missing)" in message
    holes = rec.positions.copy()
    holes[100:105, 2] = np.nan
    assert "elbow_flex is missing from 5 joint_states messages" in refused(replace(rec, positions=holes))


def test_a_stalled_driver_or_failed_writes_are_no_gap() -> None:
    rec = good()
    active = np.where(rec.times < 4.0, rec.times, np.maximum(rec.times - 0.5, 4.0))  # nothing runs in 4.0..4.5 s
    held = rec.positions.copy()
    held[:, 2] = 0.3 * np.sin(2 * np.pi * 0.5 * active)  # the goal resumes where it stopped
    stalled = replace(rec, positions=held, commands=Commands(rec.commands.times, held.copy()))
    check_recording(_cut(stalled, states=True, goals=True), ("elbow_flex",), LIMITS, CHECKS)
    check_recording(_cut(stalled, states=False, goals=True), ("elbow_flex",), LIMITS, CHECKS)  # writes failed


def test_missing_topics_name_what_they_carry() -> None:
    rec = good()
    no_goals = replace(rec, commands=Commands(np.zeros(0), np.zeros((0, 6))))
    assert "no arm_controller/controller_state messages: the goals sent to the servos are missing" in refused(no_goals)
    assert "carry no effort: the servos' load is missing" in refused(replace(rec, efforts=np.zeros_like(rec.efforts)))
