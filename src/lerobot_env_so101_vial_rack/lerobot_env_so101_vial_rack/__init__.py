"""The so101 twin's vial-rack task as a LeRobot environment plugin (LeRobot's third-party plugin convention).

Importing it (LeRobot's ``register_third_party_plugins`` does, by distribution name) registers:
- the gym id ``lerobot_env_so101_vial_rack/VialRack-v0`` (:func:`.env.make_vial_rack_env`),
- the env type ``so101_vial_rack`` (:class:`.configuration_vial_rack.So101VialRackEnv`) for ``--env.type``,
- the policy type ``so101_replay`` (:mod:`.configuration_so101_replay`): a recorded action sequence replayed, for
  checking the twin and its evaluators against a recording.
"""

import os

# headless rendering, as so101 eval --fast; read when mujoco is first imported (set MUJOCO_GL yourself where another
# plugin may import mujoco before this one)
os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium as gym

from .configuration_so101_replay import So101ReplayConfig
from .configuration_vial_rack import ENV_TYPE, GYM_ID, So101VialRackEnv

if GYM_ID not in gym.registry:
    gym.register(id=GYM_ID, entry_point="lerobot_env_so101_vial_rack.env:make_vial_rack_env")

__all__ = ["ENV_TYPE", "GYM_ID", "So101ReplayConfig", "So101VialRackEnv"]
