"""The optimizer's parameter groups of a LeRobot policy: its vision backbone at its own learning rate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def backbone_groups(policy: Any, is_backbone: Callable[[str], bool], lr: float, lr_backbone: float) -> list[dict]:
    """Two AdamW groups of ``policy``'s trainable parameters: those whose name ``is_backbone`` at ``lr_backbone``,
    the rest at ``lr`` (LeRobot's ACT preset; with ``lr_backbone == lr`` one learning rate for all)."""
    named = [(n, p) for n, p in policy.named_parameters() if p.requires_grad]
    return [
        {"params": [p for n, p in named if not is_backbone(n)], "lr": lr},
        {"params": [p for n, p in named if is_backbone(n)], "lr": lr_backbone},
    ]
