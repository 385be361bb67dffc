"""What a policy server hosts: a policy that maps one N1.6 observation to an action chunk."""

from __future__ import annotations

from typing import Any, Protocol


class PolicyBackend(Protocol):
    """A policy behind the server. ``get_action`` takes a validated nested observation and returns
    ``(action, info)`` with ``action = {"single_arm": (B, H, 5), "gripper": (B, H, 1)}`` float32 in dataset units."""

    cameras: tuple[str, ...]
    horizon: int

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]: ...
    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]: ...
