"""MuJoCo digital twin of the SO-101 pick-and-place scene (core library, no transport).

Modules: ``config`` (YAML → frozen dataclasses), ``scene`` (MjSpec composition), ``randomization``
(domain randomization), ``task`` (success), ``twin`` (model + data wrapper), ``ik`` (damped least
squares), ``scripted_expert`` and ``bench``.

Offscreen rendering picks its OpenGL backend when ``mujoco`` is first imported; on a headless machine
the default (GLFW) has no display, so EGL (Mesa llvmpipe on CPU, or the NVIDIA driver) is set here
unless the caller already chose one.
"""

from __future__ import annotations

import os
import sys

if "mujoco" not in sys.modules:
    os.environ.setdefault("MUJOCO_GL", "egl")

from so101_core.robot_spec import CAMERA_NAMES, GRIPPER_INDEX, JOINT_NAMES

__all__ = ["CAMERA_NAMES", "GRIPPER_INDEX", "JOINT_NAMES"]
