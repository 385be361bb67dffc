"""Inverse kinematics of the SO-101 arm behind one interface, the backend chosen by ``config/ik.yaml``.

>>> solver = load_ik_solver()                       # config/ik.yaml
>>> result = solver.solve(target_poses, seed_q)     # (B, 4, 4) base-frame EE poses, (B, 5) rad
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from ..kinematics import ArmKinematics
from .analytic import AnalyticIK, AnalyticSolution
from .base import (
    BACKENDS,
    BatchedConfig,
    CuroboConfig,
    IKBatchResult,
    IKConfig,
    IKConfigError,
    IKError,
    IKSolver,
    JacobianConfig,
    UnknownBackendError,
    load_ik_config,
    parse_ik_config,
)
from .batched import BatchedIK
from .curobo import CuroboIK, curobo_available
from .jacobian import JacobianIK

__all__ = [
    "BACKENDS",
    "AnalyticIK",
    "AnalyticSolution",
    "BatchedConfig",
    "BatchedIK",
    "CuroboConfig",
    "CuroboIK",
    "IKBatchResult",
    "IKConfig",
    "IKConfigError",
    "IKError",
    "IKSolver",
    "JacobianConfig",
    "JacobianIK",
    "UnknownBackendError",
    "curobo_available",
    "load_ik_config",
    "load_ik_solver",
    "parse_ik_config",
]


def load_ik_solver(
    config: str | Path | Mapping[str, Any] | IKConfig | None = None,
    *,
    kinematics: ArmKinematics | None = None,
    device: str | torch.device | None = None,
    backend: str | None = None,
) -> IKSolver:
    """The IK solver named by ``config`` (YAML path, parsed mapping, :class:`IKConfig`; default
    ``config/ik.yaml``); ``backend`` overrides the configured one. ``device`` applies to ``batched`` and
    ``curobo`` (default: the kinematics' device); ``analytic`` and ``jacobian`` compute on the CPU."""
    cfg = load_ik_config(config)
    name = backend if backend is not None else cfg.backend
    if name not in BACKENDS:
        raise UnknownBackendError(f"ik.backend: unknown IK backend {name!r} (known: {', '.join(BACKENDS)})")
    kin = kinematics if kinematics is not None else ArmKinematics.from_urdf()
    if name == "analytic":
        return AnalyticIK(cfg, kin)
    if name == "jacobian":
        return JacobianIK(cfg, kin)
    if name == "batched":
        return BatchedIK(cfg, kin, device)
    return CuroboIK(cfg, kin, device)
