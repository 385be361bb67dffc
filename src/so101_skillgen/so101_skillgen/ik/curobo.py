"""Adapter to NVIDIA cuRobo's IK solver, available only where the ``curobo`` package imports.

cuRobo is in no registry reachable from this project's machines, so the adapter is never exercised here;
constructing it without cuRobo raises :class:`~so101_skillgen.ik.base.IKError` pointing at the ``batched``
backend, which implements the same idea (multi-seed batched IK with limit and self-collision costs) in torch.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import torch
from torch import Tensor

from ..kinematics import ArmKinematics
from ..se3 import quat_from_matrix
from .base import IKBatchResult, IKConfig, IKError
from .jacobian import check_inputs
from .pose_error import pose_error

__all__ = ["CuroboIK", "curobo_available"]


def curobo_available() -> bool:
    """Whether NVIDIA cuRobo can be imported."""
    try:
        return importlib.util.find_spec("curobo") is not None
    except (ImportError, ValueError):
        return False


class CuroboIK:
    """cuRobo ``IKSolver`` behind :class:`~so101_skillgen.ik.base.IKSolver` (needs ``curobo.robot_config``)."""

    def __init__(
        self,
        config: IKConfig,
        kinematics: ArmKinematics | None = None,
        device: str | torch.device | None = None,
    ) -> None:
        if not curobo_available():
            raise IKError(
                "IK backend 'curobo' needs NVIDIA cuRobo (package 'curobo'), which is not installed; "
                "use backend: batched (the same multi-seed GPU IK, built in)"
            )
        if config.curobo.robot_config is None:
            raise IKError("ik.curobo.robot_config: a cuRobo robot YAML for the SO-101 is required")
        self.config = config
        self.kinematics = kinematics if kinematics is not None else ArmKinematics.from_urdf()
        self.device = torch.device(device) if device is not None else torch.device("cuda")
        ik_mod: Any = importlib.import_module("curobo.wrap.reacher.ik_solver")
        types_mod: Any = importlib.import_module("curobo.types.robot")
        util_mod: Any = importlib.import_module("curobo.util_file")
        robot_cfg = types_mod.RobotConfig.from_dict(util_mod.load_yaml(config.curobo.robot_config)["robot_cfg"])
        ik_cfg = ik_mod.IKSolverConfig.load_from_robot_config(
            robot_cfg,
            None,
            num_seeds=config.curobo.seeds,
            position_threshold=config.position_tolerance,
            rotation_threshold=config.rotation_tolerance,
            self_collision_check=config.curobo.self_collision,
        )
        self._solver = ik_mod.IKSolver(ik_cfg)
        self._pose_cls = importlib.import_module("curobo.types.math").Pose

    def solve(self, target: Tensor, seed: Tensor | None = None, *, partial_pose: bool = True) -> IKBatchResult:
        """Solve with cuRobo (full pose: cuRobo has no partial-pose mode for a roll-free approach axis)."""
        b = check_inputs(target, seed, self.kinematics.dof)
        tgt = target.detach().to(self.device, torch.float32)
        goal = self._pose_cls(position=tgt[:, :3, 3], quaternion=quat_from_matrix(tgt[:, :3, :3]))
        out = self._solver.solve_batch(goal)
        q = out.solution.reshape(b, -1)[:, : self.kinematics.dof].to(target.device, target.dtype)
        kin = self.kinematics
        _, pe, re = pose_error(target.to(kin.device, kin.dtype), kin.fk(q), kin.approach_axis, partial_pose)
        ok = (pe <= self.config.position_tolerance) & (re <= self.config.rotation_tolerance)
        return IKBatchResult(
            q, ok.to(target.device), pe.to(target.device), re.to(target.device), self.config.batched.iterations
        )
