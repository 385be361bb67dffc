"""LeRobot's ``PreTrainedConfig`` of the replay policy (``--policy.path`` of a directory written by
:func:`~lerobot_env_so101_vial_rack.modeling_so101_replay.save_replay_policy`): ``steps`` recorded actions, replayed
one per control step from the episode's start; ``chunk_size`` rows per ``predict_action_chunk``.

Registered as policy type ``so101_replay`` when LeRobot imports this plugin; the policy class is found by LeRobot's
naming convention (``configuration_so101_replay.So101ReplayConfig`` → ``modeling_so101_replay.So101ReplayPolicy``).
"""

from __future__ import annotations

from dataclasses import dataclass

from lerobot.configs import FeatureType, PreTrainedConfig
from lerobot.optim.optimizers import OptimizerConfig
from lerobot.optim.schedulers import LRSchedulerConfig
from lerobot.utils.constants import ACTION

POLICY_TYPE = "so101_replay"
JOINTS = 6


@PreTrainedConfig.register_subclass(POLICY_TYPE)
@dataclass
class So101ReplayConfig(PreTrainedConfig):
    """A recorded action sequence (see the module docstring); nothing to train."""

    steps: int = 1
    chunk_size: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.steps < 1 or self.chunk_size < 1:
            raise ValueError(f"so101_replay: steps and chunk_size must be >= 1, got {self.steps}, {self.chunk_size}")

    @property
    def observation_delta_indices(self) -> None:
        return None

    @property
    def action_delta_indices(self) -> list[int]:
        return list(range(self.chunk_size))

    @property
    def reward_delta_indices(self) -> None:
        return None

    def get_optimizer_preset(self) -> OptimizerConfig:
        raise NotImplementedError("so101_replay replays recorded actions: there is nothing to train")

    def get_scheduler_preset(self) -> LRSchedulerConfig | None:
        return None

    def validate_features(self) -> None:
        action = (self.output_features or {}).get(ACTION)
        if action is None or action.type is not FeatureType.ACTION or tuple(action.shape) != (JOINTS,):
            raise ValueError(f"so101_replay: the output feature {ACTION!r} must be an action of shape ({JOINTS},)")
