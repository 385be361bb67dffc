"""The gymnasium environment LeRobot makes for ``so101_vial_rack``: :class:`~so101_policy.sim_env.VialRackEnv` (the
episode of ``so101 eval``: seeded scene, DR profile, the driver's command filter, our success rules) behind a thin
wrapper that adds what LeRobot's evaluation asks of an environment and changes nothing else.

Observation ``{"agent_pos": (6,) float32, "pixels": {cam: (H, W, 3) uint8}}``, action (6,) float32, both in LeRobot
units (arm degrees, gripper 0..100); LeRobot maps them to ``observation.state`` / ``observation.images.<cam>``.
Reward 1.0 on the step our detector first succeeds; ``info["is_success"]`` (our detector) and
``info["workshop_success"]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np
from so101_policy.sim_env import EnvConfig, VialRackEnv

VIDEO_CAMERA = "top"  # the camera LeRobot's eval videos show when the policy observes none


class LeRobotVialRack(gym.Wrapper):
    """``VialRackEnv`` plus ``task_description`` (the instruction LeRobot passes to language-conditioned
    policies) and a ``render`` that works without observed cameras (LeRobot renders its eval videos with it)."""

    def __init__(self, env: VialRackEnv) -> None:
        super().__init__(env)
        self.vial_rack = env
        self._frame: tuple[object, float, np.ndarray] | None = None  # (episode, sim time, image) last rendered

    @property
    def task_description(self) -> str:
        return self.vial_rack.task

    def render(self) -> np.ndarray:
        """The first observed camera's last image; without observed cameras, :data:`VIDEO_CAMERA` at the
        environment's image size, rendered once per sim state (LeRobot renders finished sub-envs too)."""
        env = self.vial_rack
        if env.config.cameras:
            return env.render()
        twin = env.twin
        if self._frame is None or self._frame[0] is not twin.episode or self._frame[1] != twin.time:
            image = np.asarray(twin.render(VIDEO_CAMERA, width=env.config.width, height=env.config.height))
            self._frame = (twin.episode, twin.time, image)
        return self._frame[2]


def make_vial_rack_env(
    cameras: Sequence[str],
    width: int,
    height: int,
    episode_s: float,
    randomize: bool,
    dr_profile: str,
    instruction: str,
) -> LeRobotVialRack:
    """The entry point of the registered gym id: one :class:`VialRackEnv` with this :class:`EnvConfig`."""
    spec = EnvConfig(tuple(cameras), width, height, episode_s, randomize, dr_profile, instruction)
    return LeRobotVialRack(VialRackEnv(spec))
