"""lerobot_env_so101_vial_rack tests: offscreen rendering through EGL (set before anything imports mujoco), no hub
access; both pass on to the ``lerobot-eval`` processes the tests start."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
