"""``config/sysid.yaml``: excitation, recording checks and fit settings of system identification (units there)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from so101_core.config.fields import Fields, load_yaml
from so101_core.config_paths import config_dir
from so101_core.robot_spec import JOINT_NAMES

from .errors import SysidConfigError


@dataclass(frozen=True)
class ExcitationConfig:
    """Per-joint steps then a chirp about ``base_pose`` (see config/sysid.yaml for each field)."""

    base_pose: tuple[float, ...] = (0.0, -0.2, -0.4, 0.0, 0.0, 1.2)
    joints: tuple[str, ...] = JOINT_NAMES
    amplitude: float = 0.35
    step_fractions: tuple[float, ...] = (0.3, 1.0)
    hold_s: float = 0.6
    chirp_s: float = 8.0
    chirp_hz: tuple[float, float] = (0.2, 1.2)
    taper_s: float = 0.5
    speed_fraction: float = 0.9
    transit_speed: float = 0.5
    limit_margin: float = 0.1
    clearance: float = 0.06
    gripper_min: float = 0.6
    point_period_s: float = 0.01
    seed: int = 0


@dataclass(frozen=True)
class CheckConfig:
    """When a recording is refused (see config/sysid.yaml)."""

    min_duration_s: float = 4.0
    min_motion: float = 0.05
    max_saturated: float = 0.05
    saturation_level: float = 0.98
    max_gap_s: float = 0.3


@dataclass(frozen=True)
class FitConfig:
    """Search ranges and iterations of the fit (see config/sysid.yaml)."""

    latency_max_s: float = 0.1
    deadband_max_counts: float = 8.0
    iterations: int = 6
    smoothing_window: int = 9
    significance: float = 2.0


@dataclass(frozen=True)
class SysidConfig:
    excitation: ExcitationConfig = ExcitationConfig()
    checks: CheckConfig = CheckConfig()
    fit: FitConfig = FitConfig()


def load_sysid_config(path: str | Path | None = None) -> SysidConfig:
    """Load and validate ``sysid.yaml`` (default: the config directory's); errors name the field."""
    return _parse(load_yaml(path or config_dir() / "sysid.yaml", "sysid", SysidConfigError))


def parse_sysid_config(data: Mapping[str, Any]) -> SysidConfig:
    return _parse(Fields(data, "sysid", error=SysidConfigError))


def _joints(f: Fields, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = f.raw(key, list(default))
    if not isinstance(raw, list) or not raw or any(j not in JOINT_NAMES for j in raw) or len(set(raw)) != len(raw):
        raise SysidConfigError(f.field(key), f"expected distinct joints of {list(JOINT_NAMES)}, got {raw!r}")
    return tuple(raw)


def _parse(f: Fields) -> SysidConfig:
    d = ExcitationConfig
    e = f.sub("excitation", {})
    fractions = e.raw("step_fractions", list(d.step_fractions))
    if not isinstance(fractions, list) or not fractions:
        raise SysidConfigError(e.field("step_fractions"), f"expected a list of fractions, got {fractions!r}")
    excitation = ExcitationConfig(
        base_pose=e.vec("base_pose", len(JOINT_NAMES), d.base_pose, lo=-3.2, hi=3.2),
        joints=_joints(e, "joints", d.joints),
        amplitude=e.num("amplitude", d.amplitude, lo=0.0, hi=1.5, lo_open=True),
        step_fractions=tuple(e.vec("step_fractions", len(fractions), lo=0.0, hi=1.0)),
        hold_s=e.num("hold_s", d.hold_s, lo=0.05, hi=10.0),
        chirp_s=e.num("chirp_s", d.chirp_s, lo=0.0, hi=120.0),
        chirp_hz=e.interval("chirp_hz", d.chirp_hz, lo=0.01, hi=10.0),
        taper_s=e.num("taper_s", d.taper_s, lo=0.0, hi=10.0),
        speed_fraction=e.num("speed_fraction", d.speed_fraction, lo=0.0, hi=1.0, lo_open=True),
        transit_speed=e.num("transit_speed", d.transit_speed, lo=0.0, hi=5.0, lo_open=True),
        limit_margin=e.num("limit_margin", d.limit_margin, lo=0.0, hi=1.0),
        clearance=e.num("clearance", d.clearance, lo=0.0, hi=0.5),
        gripper_min=e.num("gripper_min", d.gripper_min, lo=-1.0, hi=2.0),
        point_period_s=e.num("point_period_s", d.point_period_s, lo=0.001, hi=0.1),
        seed=e.integer("seed", d.seed, lo=0),
    )
    e.finish()
    c, dc = f.sub("checks", {}), CheckConfig
    checks = CheckConfig(
        min_duration_s=c.num("min_duration_s", dc.min_duration_s, lo=0.0),
        min_motion=c.num("min_motion", dc.min_motion, lo=0.0),
        max_saturated=c.num("max_saturated", dc.max_saturated, lo=0.0, hi=1.0),
        saturation_level=c.num("saturation_level", dc.saturation_level, lo=0.0, hi=1.0, lo_open=True),
        max_gap_s=c.num("max_gap_s", dc.max_gap_s, lo=0.0, lo_open=True),
    )
    c.finish()
    t, dt = f.sub("fit", {}), FitConfig
    fit = FitConfig(
        latency_max_s=t.num("latency_max_s", dt.latency_max_s, lo=0.0, hi=0.5),
        deadband_max_counts=t.num("deadband_max_counts", dt.deadband_max_counts, lo=0.0, hi=100.0),
        iterations=t.integer("iterations", dt.iterations, lo=0, hi=100),
        smoothing_window=t.integer("smoothing_window", dt.smoothing_window, lo=5, hi=101),
        significance=t.num("significance", dt.significance, lo=0.0),
    )
    if fit.smoothing_window % 2 == 0:
        raise SysidConfigError(t.field("smoothing_window"), f"must be odd, got {fit.smoothing_window}")
    t.finish()
    f.finish()
    return SysidConfig(excitation, checks, fit)
