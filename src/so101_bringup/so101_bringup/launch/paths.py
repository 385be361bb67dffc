"""Where the YAML parameter files named by launch descriptions live (the repository's ``config/``)."""

from __future__ import annotations

import os
from pathlib import Path

from so101_bringup.launch.errors import LaunchError

CONFIG_DIR_ENV = "SO101_CONFIG_DIR"
PACKAGE = "so101_bringup"


def config_dir() -> Path:
    """``$SO101_CONFIG_DIR``, else ``config/`` of the source checkout, else ``share/so101_bringup/config``."""
    if override := os.environ.get(CONFIG_DIR_ENV):
        return Path(override)
    repo = Path(__file__).resolve().parents[4]
    if (repo / "src" / PACKAGE / "package.xml").is_file() and (repo / "config").is_dir():
        return repo / "config"
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory(PACKAGE)) / "config"
    except Exception as exc:  # not in a checkout and no ament index: nothing else to try
        raise LaunchError(f"cannot find the so101 config directory; set ${CONFIG_DIR_ENV}") from exc
