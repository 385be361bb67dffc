"""ACT as trained here: LeRobot's ``ACTPolicy``, computing what it computes, without its host-side overheads.

Against calling ``ACTPolicy.forward`` once per step, :class:`TrainableAct` changes how, not what:
- :meth:`TrainableAct.loss` computes ACT's loss (masked L1 over the chunk + ``kl_weight`` × KL of the latent)
  from ``ACT.forward``'s outputs as tensors: no ``.item()``, so no host sync per step;
- every camera goes through the ResNet in one pass, (n·B, 3, H, W) instead of n passes of (B, 3, H, W)
  (:class:`CameraBatchedBackbone`);
- the backbone's normalisation layers follow ``backbone_norm``:
  ``frozen`` is LeRobot's ``FrozenBatchNorm2d``, whose statistics with a randomly initialised backbone are the
  identity's (scale 1/√(1+ε) ≈ 1 − 5e-6): it is set to exactly unit scale and replaced by ``nn.Identity`` while
  training; ``batch`` trains ``BatchNorm2d`` layers (the usual choice for a ResNet trained from scratch);
- on CUDA the backbone runs in channels-last memory format;
- with ``aux_pose_weight`` > 0 the loss adds that weight × the auxiliary pose loss (:mod:`.aux_pose`), a head
  outside the policy that is trained with it and never exported.
A checkpoint is always written with ``FrozenBatchNorm2d`` layers (:meth:`TrainableAct.exported`): unit scale for
``frozen``, the learned affine and running statistics for ``batch`` (exactly ``BatchNorm2d`` in eval mode), so it
loads in stock LeRobot (``ACTPolicy.from_pretrained``) and is served unchanged.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, cast

import torch
from so101_core.lerobot_schema import ACTION, OBS_IMAGES
from torch import Tensor, nn
from torchvision.models._utils import IntermediateLayerGetter
from torchvision.ops.misc import FrozenBatchNorm2d

from .augment import random_shift
from .aux_pose import AuxPose
from .config import BACKBONE_NORMS as NORMS
from .errors import ConfigError
from .frame_cache import AUX_POSE
from .param_groups import backbone_groups

PAD = "action_is_pad"


class CameraBatchedBackbone(IntermediateLayerGetter):
    """ACT's backbone, serving features that :meth:`prime` computed for all cameras in one pass.

    ``ACT.forward`` calls the backbone once per camera image; after ``prime(images)`` each of those calls
    returns its slice of the one batched pass (an image not primed is computed on its own, as before). The class
    only adds behaviour: parameters and state-dict keys are the ``IntermediateLayerGetter``'s. The primed images
    are matched by object (``is``), never by ``id()``: under ``torch.compile`` an ``id()`` becomes a guard on that
    very tensor, and every call, bringing new images, would recompile.
    """

    _primed: list[tuple[Tensor, Tensor]]

    @classmethod
    def adopt(cls, backbone: IntermediateLayerGetter) -> CameraBatchedBackbone:
        """``backbone`` itself, now of this class."""
        backbone.__class__ = cls
        assert isinstance(backbone, cls)
        backbone._primed = []
        return backbone

    def prime(self, images: list[Tensor]) -> None:
        """Compute the feature maps of ``images`` (each (B, 3, H, W), one shape) in one pass."""
        features = super().forward(torch.cat(images))["feature_map"]
        self._primed = list(zip(images, features.chunk(len(images)), strict=True))

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        for k, (image, feature) in enumerate(self._primed):
            if image is x:
                del self._primed[k]
                return {"feature_map": feature}
        return cast(dict[str, Tensor], super().forward(x))


def _norm_layers(backbone: nn.Module, kind: type[nn.Module]) -> list[tuple[nn.Module, str, nn.Module]]:
    """(parent, attribute, layer) of every ``kind`` layer under ``backbone``."""
    found = []
    for parent in backbone.modules():
        for name, child in parent.named_children():
            if isinstance(child, kind):
                found.append((parent, name, child))
    return found


def _buffer(module: nn.Module, name: str) -> Tensor:
    return cast(Tensor, getattr(module, name))


def _frozen_like(num_features: int, eps: float, weight: Tensor, bias: Tensor, mean: Tensor, var: Tensor) -> nn.Module:
    layer = FrozenBatchNorm2d(num_features, eps=eps)
    for name, value in (("weight", weight), ("bias", bias), ("running_mean", mean), ("running_var", var)):
        getattr(layer, name).copy_(value.detach())
    return layer.to(weight.device)


class TrainableAct:
    """``policy`` (an ``ACTPolicy``, on its device) prepared for fast training with ``backbone_norm`` layers.

    ``fresh``: the policy was just built (its frozen norms are the identity's and may be given unit scale);
    a policy loaded from a checkpoint keeps its statistics (a ``frozen`` one must already be unit scale).
    ``image_shift_px``: each training image shifted by up to that many px (:func:`.augment.random_shift`).
    ``channels_last`` (default: on CUDA) stores the backbone's weights and images channels-last; the
    optimizer's state then follows the weights' layout (:func:`contiguous_state` / :func:`match_layout` convert
    it for checkpoints, which hold contiguous tensors).
    ``aux_pose_weight`` > 0: the auxiliary pose loss (:class:`.aux_pose.AuxPose`) on batches carrying
    :data:`.frame_cache.AUX_POSE` labels; its head is a third optimizer group and is saved with the training
    state (:meth:`save_training_extras`), never with the policy.
    """

    betas: tuple[float, float] = (0.9, 0.999)  # LeRobot's ACT preset (AdamW's defaults)

    def __init__(
        self, policy: Any, backbone_norm: str, fresh: bool, channels_last: bool | None = None, image_shift_px: int = 0,
        aux_pose_weight: float = 0.0,
    ) -> None:  # fmt: skip
        if backbone_norm not in NORMS:
            raise ConfigError("train.backbone_norm", f"must be one of {NORMS}, got {backbone_norm!r}")
        self.policy = policy
        self.norm = backbone_norm
        self.image_shift_px = image_shift_px
        self.config = policy.config
        model = policy.model
        self.backbone: CameraBatchedBackbone | None = None
        self.channels_last = False
        self._swaps: list[tuple[nn.Module, str, nn.Module, float, int]] = []  # parent, attr, layer, eps, channels
        self.aux_pose_weight = aux_pose_weight
        self.aux: AuxPose | None = None
        if aux_pose_weight > 0:
            self.aux = AuxPose(model.encoder, self.config.dim_model, next(policy.parameters()).device)
        if not self.config.image_features:
            return
        self.backbone = CameraBatchedBackbone.adopt(model.backbone)
        for parent, name, layer in _norm_layers(self.backbone, FrozenBatchNorm2d):
            frozen = cast(FrozenBatchNorm2d, layer)
            setattr(parent, name, self._training_layer(frozen, fresh))
            channels = int(_buffer(frozen, "weight").numel())
            self._swaps.append((parent, name, getattr(parent, name), float(frozen.eps), channels))
        on_cuda = next(policy.parameters()).device.type == "cuda"
        self.channels_last = on_cuda if channels_last is None else channels_last
        if self.channels_last:
            self.backbone.to(memory_format=torch.channels_last)

    def _training_layer(self, frozen: FrozenBatchNorm2d, fresh: bool) -> nn.Module:
        weight, bias, mean, var = (_buffer(frozen, n) for n in ("weight", "bias", "running_mean", "running_var"))
        eps = float(frozen.eps)
        if self.norm == "batch":
            bn = nn.BatchNorm2d(int(weight.numel()), eps=eps).to(weight.device)
            with torch.no_grad():
                bn.weight.copy_(weight)
                bn.bias.copy_(bias)
                _buffer(bn, "running_mean").copy_(mean)
                _buffer(bn, "running_var").copy_(var)
            return bn
        with torch.no_grad():
            if fresh:
                var.fill_(1.0 - eps)  # scale w / √(var + ε) = 1 exactly
            scale = weight * (var + eps).rsqrt()
            shift = bias - mean * scale
            if not (torch.allclose(scale, torch.ones_like(scale), atol=1e-6) and bool((shift == 0).all())):
                raise ConfigError(
                    "train.backbone_norm",
                    "is 'frozen' but the checkpoint's FrozenBatchNorm2d layers are not the identity (was it trained "
                    "with backbone_norm: batch?)",
                )
        return nn.Identity()

    def parameters(self) -> Iterator[nn.Parameter]:
        """The policy's parameters, then the auxiliary head's (if any)."""
        head = self.aux.head.parameters() if self.aux is not None else iter(())
        return itertools.chain(cast(Iterator[nn.Parameter], self.policy.parameters()), head)

    def optim_groups(self, lr: float, lr_backbone: float) -> list[dict[str, Any]]:
        """LeRobot's two parameter groups (the backbone at ``lr_backbone``), trainable norm layers included; the
        auxiliary head's a third at ``lr``."""
        groups = backbone_groups(self.policy, lambda name: name.startswith("model.backbone"), lr, lr_backbone)
        if self.aux is not None:
            groups.append({"params": list(self.aux.head.parameters()), "lr": lr})
        return groups

    def save_training_extras(self, training_state: Path) -> None:
        """What training needs beside the policy and the optimizer (the auxiliary head) into ``training_state/``."""
        if self.aux is not None:
            self.aux.save(training_state)

    def load_training_extras(self, training_state: Path) -> None:
        """:meth:`save_training_extras`' state back (CheckpointError when the checkpoint lacks it)."""
        if self.aux is not None:
            self.aux.load(training_state)

    def loss(self, batch: dict[str, Any]) -> tuple[Tensor, dict[str, Tensor]]:
        """ACT's training loss on a preprocessed ``batch`` (what ``ACTPolicy.forward`` returns, as tensors), plus
        ``aux_pose_weight`` × the auxiliary pose loss (part ``aux_pose_loss``) on the batch's :data:`AUX_POSE`."""
        cfg = self.config
        batch = dict(batch)
        if cfg.image_features:
            images = [random_shift(batch[key], self.image_shift_px) for key in cfg.image_features]
            if self.channels_last:
                images = [img.contiguous(memory_format=torch.channels_last) for img in images]
            batch[OBS_IMAGES] = images
            assert self.backbone is not None
            self.backbone.prime(images)
        if self.aux is not None and AUX_POSE not in batch:
            raise ConfigError("train.aux_pose_weight", f"is > 0 but the batch has no {AUX_POSE!r} labels")
        with self.aux.capturing() if self.aux is not None else nullcontext():
            actions_hat, (mu, log_sigma_x2) = self.policy.model(batch)
        abs_err = (batch[ACTION] - actions_hat).abs()
        valid = ~batch[PAD].unsqueeze(-1)
        l1 = (abs_err * valid).sum() / (valid.sum() * abs_err.shape[-1]).clamp_min(1)
        parts = {"l1_loss": l1.detach()}
        loss = l1
        if cfg.use_vae and log_sigma_x2 is not None:
            kld = (-0.5 * (1 + log_sigma_x2 - mu.pow(2) - log_sigma_x2.exp())).sum(-1).mean()
            parts["kld_loss"] = kld.detach()
            loss = l1 + kld * cfg.kl_weight
        if self.aux is not None:
            aux = self.aux.loss(batch[AUX_POSE])
            parts["aux_pose_loss"] = aux.detach()
            loss = loss + aux * self.aux_pose_weight
        return loss, parts

    @contextmanager
    def exported(self) -> Iterator[Any]:
        """The policy with ``FrozenBatchNorm2d`` layers in place of the training ones (for saving); restored after."""
        device = next(self.policy.parameters()).device
        for parent, name, layer, eps, n in self._swaps:
            if isinstance(layer, nn.BatchNorm2d):
                mean, var = _buffer(layer, "running_mean"), _buffer(layer, "running_var")
                frozen = _frozen_like(n, eps, layer.weight, layer.bias, mean, var)
            else:
                one, zero = torch.ones(n, device=device), torch.zeros(n, device=device)
                frozen = _frozen_like(n, eps, one, zero, zero, one - eps)
            setattr(parent, name, frozen)
        try:
            yield self.policy
        finally:
            for parent, name, layer, _, _ in self._swaps:
                setattr(parent, name, layer)


def fold_frozen_norms(backbone: nn.Module) -> int:
    """Fold every ``FrozenBatchNorm2d`` of a torchvision ResNet ``backbone`` into the convolution before it (for
    inference: ``conv → x·s + b`` is the convolution with weights scaled by ``s`` and bias ``b``, computed once);
    the norm layers become ``nn.Identity``. Returns how many were folded."""
    folded = 0
    for parent in list(backbone.modules()):
        children = dict(parent.named_children())
        for name, child in children.items():
            if not isinstance(child, FrozenBatchNorm2d):
                continue
            conv = children.get({"bn1": "conv1", "bn2": "conv2", "bn3": "conv3", "1": "0"}.get(name, ""))
            if not isinstance(conv, nn.Conv2d):
                continue
            weight, bias, mean, var = (_buffer(child, n) for n in ("weight", "bias", "running_mean", "running_var"))
            with torch.no_grad():
                scale = weight * (var + float(child.eps)).rsqrt()
                conv.weight.mul_(scale.reshape(-1, 1, 1, 1))
                shift = bias - mean * scale
                conv.bias = nn.Parameter(shift if conv.bias is None else conv.bias * scale + shift)
            setattr(parent, name, nn.Identity())
            folded += 1
    return folded


def contiguous_state(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """``optimizer.state_dict()`` with every tensor contiguous (safetensors, which LeRobot saves it with, refuses
    the channels-last moments of channels-last weights)."""
    state = optimizer.state_dict()
    state["state"] = {
        k: {n: t.contiguous() if torch.is_tensor(t) else t for n, t in v.items()} for k, v in state["state"].items()
    }
    return state


def match_layout(optimizer: torch.optim.Optimizer) -> None:
    """Give each parameter's optimizer-state tensors the parameter's memory layout (after loading contiguous
    ones from a checkpoint: fused optimizers step parameters and moments element for element)."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            for name, t in optimizer.state.get(p, {}).items():
                if torch.is_tensor(t) and t.shape == p.shape and t.stride() != p.stride():
                    optimizer.state[p][name] = torch.empty_like(p, dtype=t.dtype).copy_(t)
