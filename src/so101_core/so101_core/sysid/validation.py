"""How well a twin predicts a recording: it replays the recorded goals from the recorded start state and its joint
positions are compared with the measured ones (RMS and max per joint, rad).

A held-out recording (one the fit never saw: another excitation, a pick-and-place replay) run through the nominal
and the identified twin gives the figure that matters: how much of the nominal twin's tracking error the
identification removes (:func:`validate`, ``ratio`` = identified / nominal pooled RMS; below 0.5 halves it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from so101_core.arrays import F64
from so101_core.robot_spec import JOINT_NAMES
from so101_core.sim.config import SimConfig
from so101_core.sim.dynamics import ArmDynamics

from .arm_sim import ArmSim, Trace
from .errors import RecordingError
from .recording import Recording

COUNT_RAD = 2.0 * math.pi / 4095

#: How close an identified parameter must come to the truth (the emulated arm's hidden value): a fraction of the
#: true value or an absolute amount (its units), whichever is larger. The relative ones reflect what the twin's
#: tracking is sensitive to (gains and inertia to 10-15 %, passive friction less); friction gets an absolute floor
#: because a small value is mostly hidden under the servo's own damping. Latency and dead band are absolute: 5 ms
#: covers the driver's read-to-write timing inside one 10 ms cycle (stamps are taken on the host, not the servo),
#: one count is the encoder's resolution.
RECOVERY_TOLERANCES: dict[str, tuple[float, float]] = {
    "kp": (0.10, 0.0),
    "kv": (0.15, 0.0),
    "armature": (0.15, 0.0),
    "damping": (0.20, 0.02),
    "frictionloss": (0.25, 0.01),
    "deadband": (0.0, COUNT_RAD),
    "latency_s": (0.0, 0.005),
}


def tolerance(parameter: str, true: float) -> float:
    """The allowed recovery error of ``parameter`` whose true value is ``true`` (:data:`RECOVERY_TOLERANCES`)."""
    rel, absolute = RECOVERY_TOLERANCES[parameter]
    return max(rel * abs(true), absolute)


@dataclass(frozen=True)
class TrackingError:
    """Per joint (6,) RMS and max of simulated - measured position, rad, and the pooled RMS over all joints."""

    rms: F64
    max: F64

    @property
    def pooled(self) -> float:
        return float(np.sqrt(np.mean(self.rms**2)))


@dataclass(frozen=True)
class Comparison:
    """One recording through two twins: the measurement, each twin's trace and tracking error."""

    name: str
    recording: Recording
    nominal: Trace
    identified: Trace
    nominal_error: TrackingError
    identified_error: TrackingError

    @property
    def ratio(self) -> float:
        """identified / nominal pooled RMS."""
        return self.identified_error.pooled / self.nominal_error.pooled


def replay(rec: Recording, sim: ArmSim, dynamics: ArmDynamics) -> tuple[Trace, TrackingError]:
    """Simulate ``rec`` with ``dynamics`` from its first complete sample; the trace and its tracking error."""
    ok = np.all(np.isfinite(rec.positions), axis=1)
    if np.count_nonzero(ok) < 2:
        raise RecordingError(f"{rec.source or 'the recording'}: no complete joint_states sample to replay")
    k0 = int(np.flatnonzero(ok)[0])
    times = rec.times[k0:]
    sim.set_dynamics(dynamics)
    trace = sim.simulate(rec.commands, float(times[0]), rec.positions[k0], np.nan_to_num(rec.velocities[k0]), times)
    error = trace.positions - rec.positions[k0:]
    valid = np.isfinite(error)
    rms = np.array([math.sqrt(float(np.mean(error[valid[:, j], j] ** 2))) for j in range(len(JOINT_NAMES))])
    peak = np.array([float(np.max(np.abs(error[valid[:, j], j]))) for j in range(len(JOINT_NAMES))])
    return trace, TrackingError(rms, peak)


def validate(
    recordings: dict[str, Recording], config: SimConfig, nominal: ArmDynamics, identified: ArmDynamics
) -> list[Comparison]:
    """Each named recording through the nominal and the identified twin."""
    sim = ArmSim(config, nominal)
    out = []
    for name, rec in recordings.items():
        nom_trace, nom_err = replay(rec, sim, nominal)
        id_trace, id_err = replay(rec, sim, identified)
        out.append(Comparison(name, rec, nom_trace, id_trace, nom_err, id_err))
    return out


def pooled_ratio(comparisons: list[Comparison]) -> float:
    """identified / nominal RMS over every joint of every comparison (each recording weighted equally)."""
    ident = np.mean([c.identified_error.pooled**2 for c in comparisons])
    nom = np.mean([c.nominal_error.pooled**2 for c in comparisons])
    return float(np.sqrt(ident / nom))
