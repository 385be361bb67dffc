"""How GR00T sees so101's LeRobot data: joint groups, the language key, the modality config.

The one home of these names. The v2.1 export (``meta/modality.json``, ``gr00t/so101_modality_config.py``) and the
policy server (``get_modality_config``, the observation's language key) both read them. They follow GR00T N1.6
(Isaac-GR00T ``gr00t/data/dataset/lerobot_episode_loader.py``, ``examples/SO100``):

- ``observation.state`` and ``action`` (6,) split into joint groups ``single_arm`` [0:5] (degrees) and
  ``gripper`` [5:6] (0..100), the slices of ``meta/modality.json``;
- the task text is the annotation group :data:`ANNOTATION_GROUP` of ``meta/modality.json`` (no ``annotation.``
  prefix there: the loader adds it), so the language key of the modality config and of every observation is
  :data:`LANGUAGE_KEY`;
- a policy sees one step of video, state and language and returns a chunk of ``horizon`` actions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from so101_core.robot_spec import GRIPPER_INDEX, JOINT_NAMES

OBS_STATE: Final = "observation.state"
"""LeRobot feature key of the (6,) joint state (``lerobot.utils.constants.OBS_STATE``)."""

ACTION: Final = "action"
"""LeRobot feature key of the (6,) joint command (``lerobot.utils.constants.ACTION``)."""

OBS_IMAGES: Final = "observation.images"
"""Prefix of LeRobot's camera feature keys (``lerobot.utils.constants.OBS_IMAGES``); see :func:`image_key`."""


def image_key(camera: str) -> str:
    """LeRobot feature key of ``camera``'s frames: ``observation.images.<camera>``."""
    return f"{OBS_IMAGES}.{camera}"


def is_image_key(key: str) -> bool:
    """Whether ``key`` is a camera feature key (``observation.images.<camera>``)."""
    return key.startswith(f"{OBS_IMAGES}.") and len(key) > len(OBS_IMAGES) + 1


def camera_of(key: str) -> str:
    """The camera of an image feature key (:func:`image_key`'s inverse); ValueError for any other key."""
    if not is_image_key(key):
        raise ValueError(f"not a LeRobot image feature key: {key!r}")
    return key[len(OBS_IMAGES) + 1 :]


JOINT_GROUPS: Final[dict[str, tuple[int, int]]] = {
    "single_arm": (0, GRIPPER_INDEX),
    "gripper": (GRIPPER_INDEX, len(JOINT_NAMES)),
}
"""Joint group → ``(start, end)`` slice of the 6-vector of ``observation.state`` and ``action``."""

ANNOTATION_GROUP: Final = "human.task_description"
"""Key of the task text in ``meta/modality.json``'s ``annotation`` group."""

LANGUAGE_KEY: Final = f"annotation.{ANNOTATION_GROUP}"
"""The language key GR00T derives from :data:`ANNOTATION_GROUP`: modality config and observations use it."""

TASK_COLUMN: Final = "task_index"
"""Parquet column holding the task (an index into ``meta/tasks.jsonl``)."""

ACTION_HORIZON: Final = 16
"""GR00T N1.6's action chunk (steps at 30 Hz): the fine-tuning modality config and GR00T policies."""

ACTION_REPRESENTATION: Final[dict[str, str]] = {"single_arm": "RELATIVE", "gripper": "ABSOLUTE"}
"""GR00T fine-tuning's ``ActionRepresentation`` name per joint group: arm relative to the state, gripper absolute."""


@dataclass(frozen=True)
class ModalityConfig:
    """One modality of GR00T's modality config: steps (relative to now) and keys it uses."""

    delta_indices: tuple[int, ...]
    modality_keys: tuple[str, ...]


def modality_configs(cameras: Sequence[str], horizon: int = ACTION_HORIZON) -> dict[str, ModalityConfig]:
    """``{"video", "state", "action", "language": ModalityConfig}`` of a policy seeing ``cameras`` and returning
    ``horizon`` actions."""
    if horizon < 1:
        raise ValueError(f"horizon must be >= 1, got {horizon}")
    groups = tuple(JOINT_GROUPS)
    return {
        "video": ModalityConfig((0,), tuple(cameras)),
        "state": ModalityConfig((0,), groups),
        "action": ModalityConfig(tuple(range(horizon)), groups),
        "language": ModalityConfig((0,), (LANGUAGE_KEY,)),
    }
