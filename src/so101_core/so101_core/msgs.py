"""Where the ``so101_msgs`` interface files are, for the runtime's typestore (entry point ``nodegraph.interfaces``)."""

from __future__ import annotations

import os
from pathlib import Path

MSGS_DIR_ENV = "SO101_MSGS_DIR"


def interface_dir() -> Path:
    """``$SO101_MSGS_DIR``, ``share/so101_msgs`` of an ament prefix, or ``src/so101_msgs`` of this checkout."""
    candidates: list[Path] = []
    if env := os.environ.get(MSGS_DIR_ENV):
        candidates.append(Path(env))
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        candidates.append(Path(prefix) / "share" / "so101_msgs")
    candidates.append(Path(__file__).resolve().parents[2] / "so101_msgs")
    for candidate in candidates:
        if (candidate / "action").is_dir() or (candidate / "srv").is_dir():
            return candidate
    raise FileNotFoundError(f"so101_msgs interface files not found (looked in {', '.join(map(str, candidates))})")
