"""Image augmentation for training: random shifts (DrQ's, as diffusion policy's random crop), on the device.

A policy trained on a few hundred demos under wide domain randomization fits the scenes it saw and misses new
ones (bench/results/policy_h100_session3: 64 % on its training scenes, 10 % held out); a shift of a few pixels per
sample is the standard cheap regulariser for such visual overfitting, and costs one gather per camera.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor


def random_shift(images: Tensor, pad: int, generator: torch.Generator | None = None) -> Tensor:
    """``images`` (B, C, H, W) each moved by its own random integer offset in [-pad, pad] px along both axes, the
    uncovered border filled by edge replication; ``pad`` 0 returns ``images`` itself."""
    if pad <= 0:
        return images
    b, c, h, w = images.shape
    padded = F.pad(images, (pad, pad, pad, pad), mode="replicate")
    offsets = torch.randint(0, 2 * pad + 1, (2, b), device=images.device, generator=generator)
    rows = torch.arange(h, device=images.device)[None, :] + offsets[0][:, None]  # (B, H)
    cols = torch.arange(w, device=images.device)[None, :] + offsets[1][:, None]  # (B, W)
    batch = torch.arange(b, device=images.device)[:, None, None, None]
    channel = torch.arange(c, device=images.device)[None, :, None, None]
    return padded[batch, channel, rows[:, None, :, None], cols[:, None, None, :]]
