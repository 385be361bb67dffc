"""so101_policy tests: offscreen rendering through EGL (set before anything imports mujoco), no hub access."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
