"""GR00T N1.5's dialect of the policy-server wire (``so101 serve --protocol n1.5``), from Isaac-GR00T N1.5's
``gr00t/eval/service.py`` and ``gr00t/model/policy.py``. Same msgpack and ndarray encoding as :mod:`.protocol`;
what differs:

- ``get_modality_config``: ``as_json`` is a JSON *string* (pydantic's ``model_dump_json``) of ``delta_indices`` and
  ``modality_keys``, the keys prefixed by their modality (``video.ego``, ``state.single_arm``, ``action.gripper``;
  language ``annotation.human.task_description``), decoded there with ``ModalityConfig(**json.loads(...))``;
- ``get_action``: ``data`` is the flat observation itself, ``{"video.<cam>": uint8 (T, H, W, 3),
  "state.single_arm": (T, 5), "state.gripper": (T, 1), "annotation.human.task_description": [str]}``, or batched
  with a leading B on every array and B strings; the reply is the flat action ``{"action.single_arm": (B, H, 5),
  "action.gripper": (B, H, 1)}`` float32, unbatched with every unit axis squeezed as N1.5 does (``(H, 5)``,
  ``(H,)``). N1.5 has no options: the backend gets None.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from so101_core.lerobot_schema import LANGUAGE_KEY, modality_configs

from .errors import ProtocolError
from .protocol import MODALITY_TAG


def _flat_key(modality: str, key: str) -> str:
    return key if modality == "language" else f"{modality}.{key}"


def modality_config_reply(cameras: tuple[str, ...], horizon: int) -> dict[str, Any]:
    """N1.5 ``get_modality_config`` reply of a policy seeing ``cameras`` and returning ``horizon`` actions."""
    reply = {}
    for modality, config in modality_configs(cameras, horizon).items():
        body = {
            "delta_indices": list(config.delta_indices),
            "modality_keys": [_flat_key(modality, k) for k in config.modality_keys],
        }
        reply[modality] = {MODALITY_TAG: True, "as_json": json.dumps(body)}
    return reply


def _array(flat: dict[str, Any], key: str) -> np.ndarray:
    value = flat.get(key)
    if not isinstance(value, np.ndarray):
        raise ProtocolError(f"N1.5 observation lacks ndarray {key!r} (got {type(value).__name__})")
    return value


def nested_observation(flat: Any, cameras: tuple[str, ...]) -> tuple[dict[str, Any], bool]:
    """The nested N1.6 observation of a flat N1.5 one, and whether it was batched (state arrays of 3 dims).

    Raises:
        ProtocolError: a missing key, a state of neither (T, D) nor (B, T, D), texts that do not match the batch;
            shapes and dtypes are then checked on the nested form (:func:`.protocol.check_observation`).
    """
    if not isinstance(flat, dict):
        raise ProtocolError(f"N1.5 get_action data must be the flat observation map, got {type(flat).__name__}")
    arm = _array(flat, "state.single_arm")
    if arm.ndim not in (2, 3):
        raise ProtocolError(f"N1.5 observation state.single_arm must be (T, 5) or (B, T, 5), got {arm.shape}")
    batched = arm.ndim == 3
    texts = flat.get(LANGUAGE_KEY)
    if isinstance(texts, str):
        texts = [texts]
    batch = arm.shape[0] if batched else 1
    if not isinstance(texts, list | tuple) or len(texts) != batch or not all(isinstance(t, str) for t in texts):
        raise ProtocolError(f"N1.5 observation {LANGUAGE_KEY!r} must be {batch} str in a list")

    def batch_of(array: np.ndarray) -> np.ndarray:
        return array if batched else array[None]

    nested = {
        "video": {cam: batch_of(_array(flat, f"video.{cam}")) for cam in cameras},
        "state": {group: batch_of(_array(flat, f"state.{group}")) for group in ("single_arm", "gripper")},
        "language": {LANGUAGE_KEY: [[t] for t in texts]},
    }
    return nested, batched


def flat_action(action: dict[str, Any], batched: bool) -> dict[str, np.ndarray]:
    """The N1.5 reply of a nested action chunk ``{group: (B, H, D)}``: ``{"action.<group>": ...}`` float32."""
    out = {f"action.{group}": np.asarray(value, dtype=np.float32) for group, value in action.items()}
    return out if batched else {key: np.squeeze(value) for key, value in out.items()}
