"""Atomic file writes: a temp file in the same directory, fsync, then ``os.replace`` (a reader or a crash
sees the old file or the new one, never half of one). The one home of this rule for the pipeline's markers,
the dataset's units and SkillGen's progress."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

TMP_SUFFIX = ".part"


def write_text(path: str | Path, text: str) -> Path:
    """Replace ``path`` with ``text`` atomically; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}{TMP_SUFFIX}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a failed write leaves the old file and nothing beside it
        raise
    return p


def write_json(path: str | Path, data: Any) -> Path:
    """Replace ``path`` with ``data`` as indented, key-sorted JSON, atomically."""
    return write_text(path, json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


def read_json(path: str | Path) -> Any | None:
    """The JSON in ``path``, or None when it is missing or unreadable (a torn file cannot exist, see above)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
