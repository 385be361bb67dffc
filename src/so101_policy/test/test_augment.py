"""Random-shift augmentation: each image moves by its own offset within the pad, the training loss sees it, and the
setting is validated."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from so101_policy.act_training import TrainableAct
from so101_policy.augment import random_shift
from so101_policy.config import TrainConfig
from so101_policy.errors import ConfigError
from test_act_training import _batch, _policy


def offset_of(shifted: torch.Tensor, padded: torch.Tensor, pad: int) -> tuple[int, int] | None:
    h, w = shifted.shape[-2:]
    for dy in range(2 * pad + 1):
        for dx in range(2 * pad + 1):
            if torch.equal(shifted, padded[:, dy : dy + h, dx : dx + w]):
                return dy, dx
    return None


def test_each_image_is_a_window_of_its_padded_self_at_its_own_offset() -> None:
    images = torch.rand(32, 3, 12, 16, generator=torch.Generator().manual_seed(0))
    assert random_shift(images, 0) is images
    out = random_shift(images, 3, generator=torch.Generator().manual_seed(1))
    assert out.shape == images.shape
    padded = F.pad(images, (3, 3, 3, 3), mode="replicate")
    offsets = [offset_of(out[i], padded[i], 3) for i in range(len(images))]
    assert None not in offsets  # every output is the image moved by at most 3 px, edges replicated
    assert len(set(offsets)) > 8  # and the offsets differ between samples
    again = random_shift(images, 3, generator=torch.Generator().manual_seed(1))
    assert torch.equal(out, again)


def test_the_training_loss_sees_shifted_images_only_when_asked() -> None:
    plain = TrainableAct(_policy(), "frozen", fresh=True)
    shifted = TrainableAct(copy.deepcopy(plain.policy), "frozen", fresh=True, image_shift_px=4)
    seen: list[torch.Tensor] = []
    for model in (plain, shifted):
        model.policy.model.backbone.conv1.register_forward_hook(lambda m, args, out: seen.append(args[0].clone()))
    batch = _batch()
    torch.manual_seed(5)
    plain.loss(dict(batch))
    torch.manual_seed(5)
    shifted.loss(dict(batch))
    original = torch.cat([batch[f"observation.images.{c}"] for c in ("ego", "side")])
    assert torch.equal(seen[0], original) and not torch.equal(seen[1], original)


def test_a_negative_shift_is_refused() -> None:
    assert TrainConfig().image_shift_px == 0
    with pytest.raises(ConfigError, match="image_shift_px"):
        TrainConfig(image_shift_px=-1)
