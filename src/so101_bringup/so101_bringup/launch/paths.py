"""Where the YAML parameter files named by launch descriptions live (the repository's ``config/``)."""

from __future__ import annotations

from pathlib import Path

from nodegraph.launch.errors import LaunchError
from so101_core.config_paths import CONFIG_DIR_ENV

from so101_core import config_paths

__all__ = ["CONFIG_DIR_ENV", "config_dir"]


def config_dir() -> Path:
    """``$SO101_CONFIG_DIR``, else ``config/`` of the source checkout, else ``share/so101_bringup/config``."""
    try:
        return config_paths.config_dir()
    except config_paths.ConfigDirNotFoundError as exc:
        raise LaunchError(str(exc)) from exc
