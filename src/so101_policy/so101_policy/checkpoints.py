"""Checkpoints in LeRobot's layout, written atomically so a SIGKILL never leaves a half-written one.

``<out>/checkpoints/<step:06d>/pretrained_model/`` (``config.json``, ``model.safetensors``, the pre/post
processors, ``so101_train_config.json``) and ``training_state/`` (optimizer, RNG, ``training_step.json``);
``checkpoints/last`` links to the newest. A checkpoint is assembled in ``checkpoints/.partial-<step>`` and
renamed into place, then ``last`` is re-pointed (rename of a fresh link), so ``last`` always names a complete one.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from .errors import CheckpointError

CHECKPOINTS = "checkpoints"
LAST = "last"
PRETRAINED = "pretrained_model"
TRAINING_STATE = "training_state"
SO101_CONFIG = "so101_train_config.json"


def step_name(step: int) -> str:
    return f"{step:06d}"


def partial_dir(out_dir: Path, step: int) -> Path:
    """Where checkpoint ``step`` is assembled (removed first if a crash left one)."""
    path = out_dir / CHECKPOINTS / f".partial-{step_name(step)}"
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def commit(out_dir: Path, partial: Path, step: int) -> Path:
    """Move the assembled ``partial`` into place as checkpoint ``step`` and point ``last`` at it."""
    root = out_dir / CHECKPOINTS
    final = root / step_name(step)
    if final.exists():
        shutil.rmtree(final)
    os.replace(partial, final)
    tmp_link = root / f".last-{step_name(step)}"
    if tmp_link.is_symlink() or tmp_link.exists():
        tmp_link.unlink()
    tmp_link.symlink_to(final.name)
    os.replace(tmp_link, root / LAST)
    return final


def last_checkpoint(out_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run directory, or None."""
    link = out_dir / CHECKPOINTS / LAST
    if not link.is_symlink() and not link.is_dir():
        return None
    target = link.resolve()
    if not (target / PRETRAINED / "model.safetensors").is_file():
        raise CheckpointError(f"{link} points to an incomplete checkpoint {target}")
    return target


def pretrained_dir(checkpoint: Path) -> Path:
    """The ``pretrained_model`` directory for a run dir, a checkpoint dir or a pretrained_model dir itself."""
    checkpoint = Path(checkpoint)
    candidates = [checkpoint, checkpoint / PRETRAINED]
    if (checkpoint / CHECKPOINTS).is_dir():
        last = last_checkpoint(checkpoint)
        if last is not None:
            candidates.append(last / PRETRAINED)
    for c in candidates:
        if (c / "config.json").is_file() and (c / "model.safetensors").is_file():
            return c
    raise CheckpointError(
        f"no checkpoint at {checkpoint}: expected a run dir (checkpoints/last), a checkpoint dir, or a "
        "pretrained_model dir with config.json and model.safetensors"
    )


def read_json(path: Path) -> dict:
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"cannot read {path}: {exc}") from exc
