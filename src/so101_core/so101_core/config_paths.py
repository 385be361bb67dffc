"""Where the YAML configuration lives: ``$SO101_CONFIG_DIR``, the source checkout's ``config/``, or the
installed ``share/so101_bringup/config`` (ament index)."""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_DIR_ENV = "SO101_CONFIG_DIR"
PACKAGE = "so101_bringup"


class ConfigDirNotFoundError(FileNotFoundError):
    """No configuration directory could be found."""


def config_dir() -> Path:
    """The configuration directory; raises ConfigDirNotFoundError when there is none."""
    if override := os.environ.get(CONFIG_DIR_ENV):
        return Path(override)
    repo = Path(__file__).resolve().parents[3]
    if (repo / "src" / PACKAGE / "package.xml").is_file() and (repo / "config").is_dir():
        return repo / "config"
    try:
        from ament_index_python.packages import get_package_share_directory

        return Path(get_package_share_directory(PACKAGE)) / "config"
    except Exception as exc:  # not in a checkout and no ament index: nothing else to try
        raise ConfigDirNotFoundError(f"cannot find the so101 config directory; set ${CONFIG_DIR_ENV}") from exc
