"""Two evaluations of the same scenes compared scene by scene (``so101 compare``).

An evaluation is named by its output directory (``so101 eval``'s ``episodes.jsonl``, or with ``graphs`` > 1 its
``graph_*/episodes.jsonl`` together; ``so101 eval --fast``'s ``fast_episodes.jsonl``; a sweep run's
``fast_eval/``) or by an episodes file itself. Rows pair by scene seed (:func:`.metrics.paired_comparison`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import PolicyError
from .metrics import paired_comparison

ROW_FILES = ("fast_episodes.jsonl", "episodes.jsonl", "fast_eval/fast_episodes.jsonl")


def episode_rows(path: Path) -> list[dict[str, Any]]:
    """The episode rows of the evaluation at ``path`` (a directory or a ``.jsonl`` file); PolicyError naming the
    path when it holds none."""
    path = Path(path)
    files = [path] if path.is_file() else [path / name for name in ROW_FILES if (path / name).is_file()][:1]
    if path.is_dir() and not files:
        files = sorted(path.glob("graph_*/episodes.jsonl"))
    rows = []
    for file in files:
        for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise PolicyError(f"{file}:{n}: not a JSON row ({exc.msg})") from exc
    if not rows:
        raise PolicyError(f"{path}: no evaluation episodes (looked for {', '.join(ROW_FILES)}, graph_*/episodes.jsonl)")
    return rows


def compare_evaluations(a: Path, b: Path) -> dict[str, Any]:
    """:func:`.metrics.paired_comparison` of the evaluations at ``a`` and ``b``, with their paths; PolicyError when
    they share no scene."""
    try:
        paired = paired_comparison(episode_rows(a), episode_rows(b))
    except (KeyError, ValueError) as exc:
        raise PolicyError(f"{a} against {b}: {exc!r}") from exc
    if not paired["same_scenes"]:
        raise PolicyError(f"{a} and {b} share no scene seed: nothing to pair")
    return {"a": str(a), "b": str(b), **paired}
