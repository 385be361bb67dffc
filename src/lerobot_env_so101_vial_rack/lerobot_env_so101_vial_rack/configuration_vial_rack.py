"""LeRobot's ``EnvConfig`` for the twin's task: ``--env.type=so101_vial_rack``.

Imported by the package (so by LeRobot's plugin discovery) for its registration. The fields are the environment's
(:class:`so101_policy.sim_env.EnvConfig`): ``cameras`` observed at ``width`` × ``height`` px (match the checkpoint's
training cameras and image size), ``episode_s`` of sim time, DR on/off and its ``dr_profile``, the language
``instruction``; ``task`` is LeRobot's gym task id. Defaults: ``config/eval.yaml`` (episode length, DR, instruction)
and the environment's (cameras, image size). Seeds come from ``lerobot-eval --seed`` (``so101 eval``'s are
``eval.yaml`` ``seed``: pass the same to see the same scenes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import gymnasium as gym
from lerobot.configs import FeatureType, PolicyFeature
from lerobot.envs.configs import EnvConfig
from lerobot.envs.utils import FreezeAfterEpisodeEnd
from lerobot.utils.constants import ACTION, OBS_IMAGES, OBS_STATE
from so101_core.robot_spec import CAMERA_NAMES
from so101_core.sim.config import load_sim_config
from so101_policy.config import load_eval_config
from so101_policy.sim_env import EnvConfig as TwinEnvConfig

ENV_TYPE = "so101_vial_rack"
PACKAGE = "lerobot_env_so101_vial_rack"
TASK_ID = "VialRack-v0"
GYM_ID = f"{PACKAGE}/{TASK_ID}"
JOINTS = 6  # 5 arm joints + gripper, LeRobot units

_TWIN = TwinEnvConfig()


def _control_hz() -> int:
    return round(load_sim_config().physics.control_hz)


def _frozen_env(gym_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """One environment that stops simulating once its episode ended (LeRobot steps a finished sub-env until the
    whole batch is done, and would autoreset it into an unseeded episode nobody reads)."""
    return FreezeAfterEpisodeEnd(gym.make(gym_id, disable_env_checker=True, **kwargs))


@EnvConfig.register_subclass(ENV_TYPE)
@dataclass
class So101VialRackEnv(EnvConfig):
    """The single-vial task in the so101 MuJoCo twin (see the module docstring)."""

    task: str | None = TASK_ID
    fps: int = field(default_factory=_control_hz)
    cameras: list[str] = field(default_factory=lambda: list(_TWIN.cameras))
    width: int = _TWIN.width
    height: int = _TWIN.height
    episode_s: float = field(default_factory=lambda: load_eval_config().episode_s)
    randomize: bool = field(default_factory=lambda: load_eval_config().randomize)
    dr_profile: str = field(default_factory=lambda: load_eval_config().dr_profile)
    instruction: str = field(default_factory=lambda: load_eval_config().task)

    def __post_init__(self) -> None:
        unknown = [c for c in self.cameras if c not in CAMERA_NAMES]
        if unknown or len(set(self.cameras)) != len(self.cameras):
            raise ValueError(f"env.cameras must be distinct names of {list(CAMERA_NAMES)}, got {self.cameras}")
        if self.width <= 0 or self.height <= 0 or self.episode_s <= 0:
            raise ValueError(
                f"env.width, env.height and env.episode_s must be > 0, got {self.width}, {self.height}, "
                f"{self.episode_s}"
            )
        self.features = {
            ACTION: PolicyFeature(type=FeatureType.ACTION, shape=(JOINTS,)),
            "agent_pos": PolicyFeature(type=FeatureType.STATE, shape=(JOINTS,)),
            **{
                f"pixels/{c}": PolicyFeature(type=FeatureType.VISUAL, shape=(self.height, self.width, 3))
                for c in self.cameras
            },
        }
        self.features_map = {
            ACTION: ACTION,
            "agent_pos": OBS_STATE,
            **{f"pixels/{c}": f"{OBS_IMAGES}.{c}" for c in self.cameras},
        }

    @property
    def package_name(self) -> str:
        """The module LeRobot imports when the gym id is not registered (it registers :data:`GYM_ID`)."""
        return PACKAGE

    @property
    def gym_kwargs(self) -> dict[str, Any]:
        """The arguments of :func:`~lerobot_env_so101_vial_rack.env.make_vial_rack_env`."""
        return {
            "cameras": list(self.cameras),
            "width": self.width,
            "height": self.height,
            "episode_s": self.episode_s,
            "randomize": self.randomize,
            "dr_profile": self.dr_profile,
            "instruction": self.instruction,
        }

    def create_envs(self, n_envs: int, use_async_envs: bool = False) -> dict[str, dict[int, gym.vector.VectorEnv]]:
        """``{"so101_vial_rack": {0: VectorEnv of n_envs}}`` as LeRobot's default (async in forkserver processes
        when asked and ``n_envs`` > 1, autoreset in the same step), each sub-env frozen once its episode ends."""
        make_one = partial(_frozen_env, GYM_ID, self.gym_kwargs)
        mode = gym.vector.AutoresetMode.SAME_STEP
        vec: gym.vector.VectorEnv
        if use_async_envs and n_envs > 1:
            vec = gym.vector.AsyncVectorEnv([make_one] * n_envs, context="forkserver", autoreset_mode=mode)
        else:
            vec = gym.vector.SyncVectorEnv([make_one] * n_envs, autoreset_mode=mode)
        return {self.type: {0: vec}}
