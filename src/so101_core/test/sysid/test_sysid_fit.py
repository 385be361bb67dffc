"""Identification recovers an arm's hidden dynamics from a recording of its excitation (the twin with perturbed
gains, damping, friction, armature, a dead band and a latency, read with the servos' quantization), and the
identified twin tracks a held-out recording at least twice as closely as the nominal one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from so101_core.joints import twin_ranges
from so101_core.sim.config import load_sim_config
from so101_core.sim.dynamics import PARAMETERS, nominal_dynamics
from so101_core.sysid.config import load_sysid_config
from so101_core.sysid.excitation import plan_excitation
from so101_core.sysid.fit import fit_arm
from so101_core.sysid.validation import pooled_ratio, tolerance, validate
from sysid_testing import hidden_dynamics, record

JOINTS = ("shoulder_lift", "wrist_roll")  # one carrying the arm against gravity, one that does not


@pytest.mark.slow
def test_fit_recovers_hidden_dynamics_and_halves_heldout_tracking_error() -> None:
    sim, settings = load_sim_config(), load_sysid_config()
    nominal = nominal_dynamics(sim)
    hidden = hidden_dynamics(nominal)
    ranges = twin_ranges()
    excitation = replace(settings.excitation, joints=JOINTS, chirp_s=5.0, hold_s=0.4)
    fit_rec = record(sim, hidden, plan_excitation(excitation, ranges.lower, ranges.upper, 5.0), seed=0)
    held = replace(excitation, seed=1, chirp_hz=(0.3, 1.5), amplitude=0.3)
    held_rec = record(sim, hidden, plan_excitation(held, ranges.lower, ranges.upper, 5.0), seed=1)

    result = fit_arm([fit_rec], sim, nominal, settings.fit, JOINTS)

    for joint in JOINTS:
        jf = result.joints[joint]
        for name in PARAMETERS:
            true, estimate = getattr(hidden[joint], name), getattr(jf.estimate, name)
            assert abs(estimate - true) <= tolerance(name, true), f"{joint}.{name}: {estimate:.5g} vs {true:.5g}"
            assert np.isfinite(jf.sigma[name]) and jf.sigma[name] >= 0
        assert jf.position_rms < 0.2 * jf.nominal_position_rms  # the fit's residual against the nominal's
        assert all(jf.significant(settings.fit.significance).values())  # every hidden value differs from nominal
    identified = result.dynamics(settings.fit.significance, "hidden")
    assert identified["shoulder_pan"] == nominal["shoulder_pan"]  # not identified: stays nominal
    comparisons = validate({"heldout": held_rec}, sim, nominal, identified)
    assert pooled_ratio(comparisons) <= 0.5
