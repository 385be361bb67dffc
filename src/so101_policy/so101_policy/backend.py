"""What a policy server hosts: a policy that maps one N1.6 observation to an action chunk."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from .protocol import LANGUAGE_KEY, MODALITY_TAG

ARM_KEYS = ("single_arm", "gripper")


class PolicyBackend(Protocol):
    """A policy behind the server. ``get_action`` takes a validated nested observation and returns
    ``(action, info)`` with ``action = {"single_arm": (B, H, 5), "gripper": (B, H, 1)}`` float32 in dataset units."""

    cameras: tuple[str, ...]
    horizon: int

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]: ...
    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ModalityConfig:
    """GR00T's ModalityConfig (the fields our policies fill): which steps and keys one modality uses."""

    delta_indices: tuple[int, ...]
    modality_keys: tuple[str, ...]

    def wire(self) -> dict[str, Any]:
        """The N1.6 wire form: ``{"__ModalityConfig_class__": True, "as_json": <pydantic-style JSON string>}``."""
        body = {"delta_indices": list(self.delta_indices), "modality_keys": list(self.modality_keys)}
        return {MODALITY_TAG: True, "as_json": json.dumps(body)}


def modality_config(cameras: tuple[str, ...], horizon: int) -> dict[str, Any]:
    """``get_modality_config`` reply for a policy seeing ``cameras`` and returning ``horizon`` actions."""
    return {
        "video": ModalityConfig((0,), cameras).wire(),
        "state": ModalityConfig((0,), ARM_KEYS).wire(),
        "action": ModalityConfig(tuple(range(horizon)), ARM_KEYS).wire(),
        "language": ModalityConfig((0,), (LANGUAGE_KEY,)).wire(),
    }
