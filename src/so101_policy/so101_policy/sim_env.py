"""The twin as a gymnasium environment: one evaluation episode of ``so101 eval``, step by step, in LeRobot units.

An episode is the graph evaluation's (:mod:`.evaluate`): ``Twin.reset(seed)`` with the same DR profile, each
command through the driver's :class:`~so101_core.control.safety.CommandFilter` (the sim node's speed limit, applied
per control step), one control step of physics per ``step``, and success judged by both rules
(:class:`~so101_core.sim.success.SuccessRules`: the vial upright in the episode's target slot, every standing
vial still in its own) on the twin's own state. Like the graph evaluation, an episode ends once our detector
has succeeded and the workshop rule has too (or ``WORKSHOP_GRACE_S`` later), or after ``episode_s`` of sim
time.

Spaces (LeRobot's gym conventions, so ``lerobot.envs.utils.preprocess_observation`` maps them to
``observation.state`` / ``observation.images.<cam>``):
- observation ``{"agent_pos": (6,) float32, "pixels": {cam: (H, W, 3) uint8}}``: measured joints, arm in degrees
  and gripper 0..100 (:mod:`so101_core.lerobot_units`), camera images rendered after the step;
- action (6,) float32, the joint targets in the same units.
Reward 1.0 on the step our detector first reports success, else 0. ``info``: ``is_success`` (our detector),
``workshop_success``, ``seed``, ``steps``. A step after the episode ended changes nothing and costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from so101_core.control.safety import CommandFilter, EStop, JointLimits, SafetyConfig, Watchdog
from so101_core.lerobot_units import from_lerobot, to_lerobot
from so101_core.sim.config import SimConfig, load_sim_config, load_task_config
from so101_core.sim.randomization import DRConfig, load_dr_config
from so101_core.sim.success import SuccessRules
from so101_core.sim.task import TaskState
from so101_core.sim.twin import Twin

from .outcome import failure_at_end, lifted, placement

WORKSHOP_GRACE_S = 1.0  # s the graph evaluation waits for the workshop rule after our detector's success
TASK_TEXT = "put the vial in the rack"


@dataclass(frozen=True)
class EnvConfig:
    """What an environment renders and how long an episode lasts: ``cameras`` at ``width`` × ``height`` px,
    ``episode_s`` of sim time, DR on (``dr_profile`` "" = dr.yaml's base ranges) or off.

    ``pixels_every_step``: every step renders the cameras (gymnasium's contract). Off, a step returns the images of
    the last render and :meth:`VialRackEnv.observe` renders on request: an evaluator that looks only when it asks
    the policy (every ``replan`` steps) skips the renders it would throw away (3 cameras cost far more than the
    physics of a step)."""

    cameras: tuple[str, ...] = ("ego", "side", "top")
    width: int = 160
    height: int = 120
    episode_s: float = 20.0
    randomize: bool = True
    dr_profile: str = ""
    task: str = TASK_TEXT
    pixels_every_step: bool = True


def make_twin(randomize: bool, dr_profile: str = "", sim: SimConfig | None = None) -> Twin:
    """The evaluation's twin: ``sim.yaml`` and ``dr.yaml`` (``dr_profile`` applied), or no DR."""
    dr = load_dr_config(profile=dr_profile or None) if randomize else DRConfig.disabled()
    return Twin(sim or load_sim_config(), dr)


class VialRackEnv(gym.Env[dict[str, Any], np.ndarray]):
    """The single-vial task in the twin (see the module docstring)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}  # noqa: RUF012 (gymnasium declares it so)

    def __init__(self, config: EnvConfig | None = None, safety: SafetyConfig | None = None) -> None:
        self.config = spec = config or EnvConfig()
        self.twin = make_twin(spec.randomize, spec.dr_profile)
        self.task = spec.task
        self.period_s = self.twin.control_period
        self._max_episode_steps = round(spec.episode_s / self.period_s)
        self.grace_steps = round(WORKSHOP_GRACE_S / self.period_s)
        ranges = self.twin.model.actuator_ctrlrange[self.twin.index.actuator_ids]
        safety = safety or SafetyConfig()
        self.filter = CommandFilter(
            JointLimits.from_arrays(ranges[:, 0], ranges[:, 1]),
            safety.max_speed_rad_s * self.period_s,
            Watchdog(safety.watchdog_timeout_s, clock=lambda: self.twin.time),
            EStop(),
            self.period_s,
        )
        self.rules = SuccessRules.of(load_task_config(), self.twin.config)
        h, w = spec.height, spec.width
        self.observation_space = gym.spaces.Dict(
            {
                "agent_pos": gym.spaces.Box(-np.inf, np.inf, (6,), np.float32),
                "pixels": gym.spaces.Dict({c: gym.spaces.Box(0, 255, (h, w, 3), np.uint8) for c in spec.cameras}),
            }
        )
        low, high = to_lerobot(ranges[:, 0]), to_lerobot(ranges[:, 1])
        self.action_space = gym.spaces.Box(low.astype(np.float32), high.astype(np.float32), (6,), np.float32)
        self._seed = -1
        self._steps = 0
        self._success_step = -1
        self._workshop_ok = False
        self._ever_held = False
        self._vial_z = (0.0, 0.0)  # the vial's starting and highest centre height this episode, m
        self._held_at_start = False  # a partly-done start: the vial in the hand, lifted already
        self._held = False  # both jaws on the vial at the last step
        self._release: dict[str, Any] | None = None  # outcome.release_placement, kept as the episode runs
        self._done = True
        self._obs: dict[str, Any] = {}

    def _observe(self, pixels: dict[str, Any] | None = None) -> dict[str, Any]:
        """The observation now; ``pixels`` given: those images instead of a new render."""
        if pixels is None:
            s = self.config
            pixels = {c: self.twin.render(c, width=s.width, height=s.height) for c in s.cameras}
        return {"agent_pos": to_lerobot(self.twin.joint_positions()).astype(np.float32), "pixels": pixels}

    def observe(self) -> dict[str, Any]:
        """The cameras rendered now, {camera: (H, W, 3) uint8}; they also become the observation's images."""
        self._obs = self._observe()
        return self._obs["pixels"]

    def _info(self) -> dict[str, Any]:
        return {
            "is_success": self._success_step >= 0,
            "workshop_success": self._workshop_ok,
            "seed": self._seed,
            "steps": self._steps,
            "target_slot": self.twin.episode.target_slot if self.twin.episode is not None else -1,
        }

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict, dict]:
        """A new episode: the scene of ``seed`` (the graph evaluation's scene for the same seed)."""
        super().reset(seed=seed)
        self._seed = int(seed) if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self.twin.reset(self._seed)
        self.filter.reset(self.twin.joint_positions(), self.twin.time)
        self.rules.reset()
        self._steps, self._success_step, self._workshop_ok, self._done = 0, -1, False, False
        start = self.twin.task_state()
        z = float(start.vials[0][0][2])
        self._vial_z, self._held_at_start = (z, z), bool(start.held[0])
        self._ever_held = self._held_at_start  # as the graph evaluation, whose record starts with the episode
        self._held, self._release = self._held_at_start, None
        self._obs = self._observe()
        return self._obs, self._info()

    def step(self, action: np.ndarray) -> tuple[dict, float, bool, bool, dict]:
        """Command ``action`` (6,) (LeRobot units) for one control period."""
        if self._done:
            return self._obs, 0.0, self._success_step >= 0, self._success_step < 0, self._info()
        target = from_lerobot(np.asarray(action, dtype=np.float64).reshape(6))
        t_next = self.twin.time + self.period_s
        refusal = self.filter.command(target, self.twin.time)
        if refusal is not None:
            raise ValueError(f"command refused: {refusal}")
        self.twin.step(self.filter.step(self.twin.joint_positions(), t_next).goal)
        self._steps += 1
        state = self.twin.task_state()
        self._ever_held = self._ever_held or state.held[0]
        self._vial_z = (self._vial_z[0], max(self._vial_z[1], float(state.vials[0][0][2])))
        if self._held and not state.held[0] and lifted(*self._vial_z, self._held_at_start):
            self._release = self._placement(state)  # as outcome.release_placement reads the graph's record
        self._held = bool(state.held[0])
        ours, self._workshop_ok = self.rules.update(state)
        reward = 0.0
        if ours and self._success_step < 0:
            self._success_step, reward = self._steps, 1.0
        ours = self._success_step >= 0
        terminated = ours and (self._workshop_ok or self._steps - self._success_step > self.grace_steps)
        truncated = not terminated and self._steps >= self._max_episode_steps
        self._done = terminated or truncated
        self._obs = self._observe(None if self.config.pixels_every_step else self._obs["pixels"])
        return self._obs, reward, terminated, truncated, self._info()

    def _placement(self, state: TaskState) -> dict[str, Any]:
        (vp, vq), (rp, rq) = state.vials[0], state.rack
        target = self.twin.episode.target_slot if self.twin.episode is not None else -1
        return placement(np.concatenate([vp, vq]), np.concatenate([rp, rq]), target, self.twin.config.rack)

    def outcome(self) -> dict[str, Any]:
        """How the episode stands (at its end: how it ended): ``failure`` (None on success, else the graph
        evaluation's reason, :mod:`.outcome`), ``final_placement`` (where the vial is, :func:`.outcome.placement`)
        and ``release_placement`` (where it was when the jaws last let go of it lifted, None before that:
        :func:`.outcome.release_placement`)."""
        state = self.twin.task_state()
        failure = None
        if self._success_step < 0:
            (vp, vq), (rp, rq) = state.vials[0], state.rack
            vial, rack = np.concatenate([vp, vq]), np.concatenate([rp, rq])
            task, rack_config = self.rules.detector.task, self.twin.config.rack
            was_lifted = lifted(*self._vial_z, self._held_at_start)
            failure = failure_at_end(vial, rack, self._ever_held, state.held[0], was_lifted, task, rack_config)
        return {"failure": failure, "final_placement": self._placement(state), "release_placement": self._release}

    def render(self) -> np.ndarray:
        """The first camera's last image."""
        return np.asarray(self._obs["pixels"][self.config.cameras[0]])

    def close(self) -> None:
        self.twin.close()
