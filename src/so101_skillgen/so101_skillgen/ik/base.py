"""The IK interface shared by every backend: result type, solver protocol, configuration and errors.

Pose targets are EE poses (B, 4, 4) in the robot base frame (see :mod:`so101_skillgen.kinematics`); joint
vectors are the 5 arm joints (B, 5) in rad. Error vectors are ordered **position first**:
``e = (ex, ey, ez, rx, ry, rz)`` (m, rad), and so is the weight vector ``W`` once loaded.

The ordering trap: a weight vector such as ``[1, 1, 1, 0.5, 0.5, 0.2]`` means "positions 1, rotations
0.5/0.5/0.2" only when the error is position first. Fed to a rotation-first solver (e.g. one built on
MuJoCo's ``jacr``-then-``jacp`` or Pinocchio's angular-first twists) it silently weights rotation fully and
position at 0.2 along one axis — IK then "converges" with centimetre position errors. The YAML therefore
declares ``weight_order`` and the loader reorders the vector to position first and checks that it is
plausible (isotropic position weights, no rotation weight above them), refusing a vector whose declared
order contradicts its shape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import torch
from so101_core.config import ConfigDirNotFoundError, ConfigError, config_dir, load_yaml
from torch import Tensor

__all__ = [
    "BACKENDS",
    "WEIGHT_ORDERS",
    "BatchedConfig",
    "CuroboConfig",
    "IKBatchResult",
    "IKConfig",
    "IKConfigError",
    "IKError",
    "IKSolver",
    "JacobianConfig",
    "UnknownBackendError",
    "default_ik_config_path",
    "load_ik_config",
    "parse_ik_config",
]

BACKENDS = ("analytic", "jacobian", "batched", "curobo")
WEIGHT_ORDERS = ("position_first", "rotation_first")
FREE_AXES = ("out_of_plane_swing",)
"""Partial pose frees this rotation: the approach axis' swing out of the arm's vertical plane (see ik.yaml)."""


class IKError(Exception):
    """Base of every IK error of so101_skillgen."""


class UnknownBackendError(IKError, ValueError):
    """``backend`` names no known IK backend."""


class IKConfigError(IKError, ConfigError):
    """An IK configuration value is missing, malformed or implausible: the project's
    :class:`so101_core.config.ConfigError`, ``field`` the dotted path (``ik.batched.seeds``)."""


@dataclass(frozen=True, eq=False)
class IKBatchResult:
    """Best solution per target.

    ``q`` (B, 5) rad; ``success`` (B,) bool (within the configured tolerances, limits respected);
    ``position_error`` (B,) m and ``rotation_error`` (B,) rad at ``q`` (the rotation error leaves out the
    approach axis' swing out of the arm's plane when solved with ``partial_pose``, see :mod:`.pose_error`);
    ``iteration_count``: iterations run, the most over the batch, or per-target counts (B,) on the device,
    reduced only when :attr:`iterations` is read (a solve need not wait for the device).
    """

    q: Tensor
    success: Tensor
    position_error: Tensor
    rotation_error: Tensor
    iteration_count: int | Tensor

    @property
    def iterations(self) -> int:
        """Iterations run (the most over the batch)."""
        n = self.iteration_count
        if isinstance(n, Tensor):
            return int(n.max()) if n.numel() else 0
        return n

    @property
    def success_rate(self) -> float:
        """Fraction of targets solved, in [0, 1]."""
        return float(self.success.float().mean()) if self.success.numel() else 0.0


@runtime_checkable
class IKSolver(Protocol):
    """Solve EE pose targets for the 5 arm joints."""

    config: IKConfig

    def solve(self, target: Tensor, seed: Tensor | None = None, *, partial_pose: bool = True) -> IKBatchResult:
        """``target`` (B, 4, 4) base-frame EE poses; ``seed`` (B, 5) rad start (or preferred) joints."""
        ...


# ---------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class JacobianConfig:
    """Single-seed damped least squares: ``iterations`` per attempt; when the seed's attempt fails,
    ``restarts`` random joint vectors (``restart_seed`` makes them reproducible) are iterated together (one
    vectorized attempt, stopped when any converges)."""

    iterations: int = 150
    restarts: int = 32
    restart_seed: int = 0


@dataclass(frozen=True)
class BatchedConfig:
    """Multi-seed Levenberg–Marquardt over B targets × ``seeds`` starts in one tensor program.

    ``joint_limit_margin`` rad: the soft limit cost starts this far inside each limit; ``collision_margin``
    m is added to the sphere radii; weights scale those residuals relative to the pose error (m, rad).
    ``check_every``: iterations between convergence checks (one host sync each); ``compile``: run the
    iteration through ``torch.compile`` (fuses the small kernels on CUDA; first call compiles);
    ``cuda_graph``: on CUDA, replay ``check_every`` iterations as one captured CUDA graph per batch shape
    (the loop is launch-bound otherwise; solved targets then keep iterating instead of dropping out);
    ``fused``: on CUDA with Triton, run the whole solve as one kernel (:mod:`so101_skillgen.ik.fused`;
    ``compile`` / ``cuda_graph`` then do not apply); ``fused_float32``: that kernel computes in float32
    (inputs and results keep the kinematics' dtype; tolerances tightened by the rounding bound).
    """

    seeds: int = 32
    iterations: int = 100
    damping: float = 0.05
    max_step: float = 0.2
    joint_limit_weight: float = 1.0
    joint_limit_margin: float = 0.001
    self_collision: bool = True
    collision_weight: float = 1.0
    collision_margin: float = 0.0
    check_every: int = 10
    random_seed: int = 0
    compile: bool = False
    cuda_graph: bool = True
    fused: bool = True
    fused_float32: bool = True


@dataclass(frozen=True)
class CuroboConfig:
    """Settings passed to NVIDIA cuRobo's IKSolver when it is installed."""

    robot_config: str | None = None
    seeds: int = 32
    self_collision: bool = True


@dataclass(frozen=True)
class IKConfig:
    """Validated ``config/ik.yaml``.

    ``weights`` (6,): diagonal of W, **position first** (whatever ``weight_order`` the file declared);
    ``damping`` λ; ``max_step`` rad: largest joint change per iteration; adaptive rotation scaling: while the
    position error exceeds ``rotation_scaling_threshold`` m the rotation weights are multiplied by
    max(threshold / e_pos, ``rotation_scaling_min``); success: position error ≤ ``position_tolerance`` m and
    rotation error ≤ ``rotation_tolerance`` rad. ``adaptive_damping``: λ as given while the weighted error
    exceeds ``rotation_scaling_threshold`` (1 cm), below it λ² shrinks in proportion to the error
    (Levenberg–Marquardt style, floor λ/100) so the weakly actuated wrist-roll direction of partial-pose
    IK converges; ``false`` keeps λ fixed. ``tool_point`` (3,) m, EE frame: the point whose position a
    target sets (partial_pose.tool_point); ``free_axis``: the rotation partial pose leaves free.
    """

    backend: str = "jacobian"
    weights: tuple[float, ...] = (1.0, 1.0, 1.0, 0.5, 0.5, 0.2)
    weight_order: str = "position_first"
    damping: float = 0.05
    max_step: float = 0.1
    rotation_scaling_threshold: float = 0.01
    rotation_scaling_min: float = 0.05
    position_tolerance: float = 0.0005
    rotation_tolerance: float = 0.0175
    adaptive_damping: bool = True
    tool_point: tuple[float, float, float] = (0.0, 0.0, 0.0)
    free_axis: str = "out_of_plane_swing"
    jacobian: JacobianConfig = field(default_factory=JacobianConfig)
    batched: BatchedConfig = field(default_factory=BatchedConfig)
    curobo: CuroboConfig = field(default_factory=CuroboConfig)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise UnknownBackendError(f"ik.backend: unknown IK backend {self.backend!r} (known: {', '.join(BACKENDS)})")
        if self.weight_order != "position_first":
            raise IKConfigError("ik.weight_order", "IKConfig holds weights position first; load via parse_ik_config")
        check_weights(self.weights, "position_first")
        _positive("ik.damping", self.damping)
        _positive("ik.max_step", self.max_step)
        _positive("ik.rotation_scaling_threshold", self.rotation_scaling_threshold)
        if not 0.0 < self.rotation_scaling_min <= 1.0:
            raise IKConfigError("ik.rotation_scaling_min", f"must be in (0, 1], got {self.rotation_scaling_min}")
        _positive("ik.position_tolerance", self.position_tolerance)
        if self.free_axis not in FREE_AXES:
            raise IKConfigError(
                "ik.partial_pose.free_axis", f"must be one of {', '.join(FREE_AXES)}, got {self.free_axis!r}"
            )
        if len(self.tool_point) != 3 or not all(math.isfinite(x) and abs(x) <= 0.5 for x in self.tool_point):
            raise IKConfigError(
                "ik.partial_pose.tool_point", f"need 3 finite numbers within ±0.5 m, got {self.tool_point}"
            )
        _positive("ik.rotation_tolerance", self.rotation_tolerance)
        for name, value in (("ik.jacobian.iterations", self.jacobian.iterations),
                            ("ik.batched.seeds", self.batched.seeds),
                            ("ik.batched.iterations", self.batched.iterations),
                            ("ik.batched.check_every", self.batched.check_every),
                            ("ik.curobo.seeds", self.curobo.seeds)):  # fmt: skip
            if value < 1:
                raise IKConfigError(name, f"must be ≥ 1, got {value}")
        if self.jacobian.restarts < 0:
            raise IKConfigError("ik.jacobian.restarts", f"must be ≥ 0, got {self.jacobian.restarts}")
        _positive("ik.batched.damping", self.batched.damping)
        _positive("ik.batched.max_step", self.batched.max_step)
        for fname, fvalue in (("ik.batched.joint_limit_weight", self.batched.joint_limit_weight),
                              ("ik.batched.joint_limit_margin", self.batched.joint_limit_margin),
                              ("ik.batched.collision_weight", self.batched.collision_weight),
                              ("ik.batched.collision_margin", self.batched.collision_margin)):  # fmt: skip
            if not (math.isfinite(fvalue) and fvalue >= 0.0):
                raise IKConfigError(fname, f"must be a finite number ≥ 0, got {fvalue}")

    @property
    def weights_tensor(self) -> Tensor:
        """W diagonal (6,) float64, position first."""
        return torch.tensor(self.weights, dtype=torch.float64)


def _positive(name: str, value: float) -> None:
    if not (math.isfinite(value) and value > 0.0):
        raise IKConfigError(name, f"must be a finite number > 0, got {value}")


def check_weights(weights: tuple[float, ...], order: str) -> tuple[float, ...]:
    """Return the weight vector reordered to position first, or raise :class:`IKConfigError`.

    Plausible means: 6 finite weights ≥ 0, the three position weights equal (translation has no preferred
    axis) and positive, and no rotation weight (rad) above the position weight (m). A vector that is only
    plausible in the other order is reported as an ordering mistake.
    """
    if order not in WEIGHT_ORDERS:
        raise IKConfigError("ik.weight_order", f"must be one of {', '.join(WEIGHT_ORDERS)}, got {order!r}")
    if len(weights) != 6 or not all(math.isfinite(w) and w >= 0.0 for w in weights):
        raise IKConfigError("ik.weights", f"need 6 finite weights ≥ 0, got {list(weights)}")
    first, second = tuple(weights[:3]), tuple(weights[3:])
    pos, rot = (first, second) if order == "position_first" else (second, first)

    def plausible(p: tuple[float, ...], r: tuple[float, ...]) -> bool:
        return p[0] > 0.0 and max(p) - min(p) <= 1e-9 * max(p) and max(r) <= p[0]

    if not plausible(pos, rot):
        other = "rotation_first" if order == "position_first" else "position_first"
        swapped = plausible(rot, pos)
        hint = (
            f" — it reads as {other}; fix ik.weight_order or reorder the vector (the ordering trap)"
            if swapped
            else " — position weights must be equal and ≥ every rotation weight"
        )
        raise IKConfigError(
            "ik.weights",
            f"{list(weights)} is not a plausible {order} weight vector{hint}",
        )
    return (*pos, *rot)


def _section(data: Mapping[str, Any], key: str, cls: type[Any]) -> Any:
    raw = data.get(key, {})
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise IKConfigError(f"ik.{key}", f"expected a mapping, got {type(raw).__name__}")
    known = {f.name: f for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for k, v in raw.items():
        if k not in known:
            raise IKConfigError(f"ik.{key}.{k}", f"unknown field (known: {', '.join(known)})")
        kwargs[str(k)] = _coerce(f"ik.{key}.{k}", v, getattr(cls(), str(k)))
    return cls(**kwargs)


def _coerce(name: str, value: Any, default: Any) -> Any:
    """Type-check ``value`` against the type of the field's ``default``."""
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise IKConfigError(name, f"expected true/false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise IKConfigError(name, f"expected an integer, got {value!r}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise IKConfigError(name, f"expected a number, got {value!r}")
        return float(value)
    if default is None or isinstance(default, str):
        if value is not None and not isinstance(value, str):
            raise IKConfigError(name, f"expected a string, got {value!r}")
        return value
    return value


_TOP = {
    "backend",
    "weights",
    "weight_order",
    "damping",
    "max_step",
    "rotation_scaling_threshold",
    "rotation_scaling_min",
    "position_tolerance",
    "rotation_tolerance",
    "adaptive_damping",
    "partial_pose",
    "jacobian",
    "batched",
    "curobo",
}


def parse_ik_config(data: Mapping[str, Any]) -> IKConfig:
    """Validate a parsed ``ik.yaml`` mapping (top level, or under an ``ik:`` key)."""
    if not isinstance(data, Mapping):
        raise IKConfigError("ik", f"expected a mapping, got {type(data).__name__}")
    if set(data) == {"ik"}:
        data = data["ik"]
        if not isinstance(data, Mapping):
            raise IKConfigError("ik", f"expected a mapping, got {type(data).__name__}")
    for k in data:
        if k not in _TOP:
            raise IKConfigError(f"ik.{k}", f"unknown field (known: {', '.join(sorted(_TOP))})")
    defaults = IKConfig()
    backend = data.get("backend", defaults.backend)
    if not isinstance(backend, str):
        raise IKConfigError("ik.backend", f"expected a string, got {backend!r}")
    if backend not in BACKENDS:
        raise UnknownBackendError(f"ik.backend: unknown IK backend {backend!r} (known: {', '.join(BACKENDS)})")
    if "weights" in data and "weight_order" not in data:
        raise IKConfigError("ik.weight_order", "required with ik.weights (position_first or rotation_first)")
    order = data.get("weight_order", "position_first")
    raw_w = data.get("weights", list(defaults.weights))
    if not isinstance(raw_w, list | tuple) or not all(
        isinstance(w, int | float) and not isinstance(w, bool) for w in raw_w
    ):
        raise IKConfigError("ik.weights", f"expected a list of 6 numbers, got {raw_w!r}")
    if not isinstance(order, str):
        raise IKConfigError("ik.weight_order", f"expected a string, got {order!r}")
    weights = check_weights(tuple(float(w) for w in raw_w), order)
    scalars: dict[str, Any] = {}
    for k in (
        "damping",
        "max_step",
        "rotation_scaling_threshold",
        "rotation_scaling_min",
        "position_tolerance",
        "rotation_tolerance",
        "adaptive_damping",
    ):
        if k in data:
            scalars[k] = _coerce(f"ik.{k}", data[k], getattr(defaults, k))
    pp = data.get("partial_pose", {}) or {}
    if not isinstance(pp, Mapping):
        raise IKConfigError("ik.partial_pose", f"expected a mapping, got {type(pp).__name__}")
    for k in pp:
        if k not in ("tool_point", "free_axis", "reason"):
            raise IKConfigError(f"ik.partial_pose.{k}", "unknown field (known: tool_point, free_axis, reason)")
    if "tool_point" in pp:
        tp = pp["tool_point"]
        if (
            not isinstance(tp, list | tuple)
            or len(tp) != 3
            or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in tp)
        ):
            raise IKConfigError("ik.partial_pose.tool_point", f"expected 3 numbers (m, EE frame), got {tp!r}")
        scalars["tool_point"] = tuple(float(x) for x in tp)
    if "free_axis" in pp:
        scalars["free_axis"] = _coerce("ik.partial_pose.free_axis", pp["free_axis"], defaults.free_axis)
    return IKConfig(
        backend=backend,
        weights=weights,
        weight_order="position_first",
        jacobian=_section(data, "jacobian", JacobianConfig),
        batched=_section(data, "batched", BatchedConfig),
        curobo=_section(data, "curobo", CuroboConfig),
        **scalars,
    )


def default_ik_config_path() -> Path:
    """``ik.yaml`` of the one configuration directory (``so101_core.config.config_dir``: ``$SO101_CONFIG_DIR``,
    the checkout's ``config/`` or the installed ``share/so101_bringup/config``)."""
    try:
        return config_dir() / "ik.yaml"
    except ConfigDirNotFoundError as exc:
        raise IKConfigError("ik", f"no configuration directory: {exc}") from exc


def load_ik_config(config: str | Path | Mapping[str, Any] | IKConfig | None = None) -> IKConfig:
    """An :class:`IKConfig` from a YAML path, a parsed mapping, an IKConfig, or the default file."""
    if isinstance(config, IKConfig):
        return config
    if isinstance(config, Mapping):
        return parse_ik_config(config)
    path = Path(config) if config is not None else default_ik_config_path()
    f = load_yaml(path, "ik", IKConfigError)
    return parse_ik_config({k: f.raw(k) for k in f.names()})
