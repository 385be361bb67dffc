"""The auxiliary pose loss of ACT training (``train.aux_pose_weight``): training-only supervision from the
simulator's privileged object poses, to make the perception localise the rack and the vial.

:class:`AuxPose` taps ACT's transformer-encoder output (a forward hook on ``model.encoder``: tokens (S, B, D), S =
latent + state + every camera's feature-map cells) plus the position embedding the encoder was given (S, 1, D): ACT
adds positions to the attention's queries and keys only, so the output tokens carry content, and a head reading
where a cell is needs them added back, as ACT's decoder has them in its cross-attention. It regresses the row's
labels (B, 5), normalised (:func:`.training_data.aux_pose_labels`): the episode's goal xy (where its vial ends up)
and the vial's current xyz, world frame. The head pools the tokens with one learned query (softmax attention over
the S tokens, the query initialised to zero, so it starts as the mean over tokens): the vial and the target slot
fill a few of the ~20 cells per camera, which a mean dilutes by 1/S while the query can learn to pick them; then
LayerNorm → Linear(D, 256) → ReLU → Linear(256, 5). The loss is the L1 distance to the labels, averaged over the
batch and the 5 labels.

The head is not part of the LeRobot policy: its parameters are a separate optimizer group and it is saved beside
the optimizer (:data:`HEAD_FILE` in ``training_state/``), never in ``pretrained_model``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from .errors import CheckpointError

HEAD_FILE = "aux_pose_head.safetensors"  # in a checkpoint's training_state/
LABELS = 5  # goal xy, vial xyz (training_data.POSE_LABELS)


class AuxPoseHead(nn.Module):
    """Encoder tokens (S, B, ``dim``) → pose labels (B, ``out``): attention pooling with one learned query, then an
    MLP (module docstring)."""

    def __init__(self, dim: int, hidden: int = 256, out: int = LABELS) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.query = nn.Parameter(torch.zeros(dim))  # zero: uniform weights, the mean over tokens, at the start
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, out))

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.norm(tokens)
        weights = torch.softmax(x @ self.query / math.sqrt(x.shape[-1]), dim=0)  # (S, B), over the tokens
        pooled = (weights.unsqueeze(-1) * x).sum(0)  # (B, D)
        return self.mlp(pooled)


class AuxPose:
    """The head on ``encoder`` (ACT's ``model.encoder``, width ``dim``) and its loss, on ``device``."""

    def __init__(self, encoder: nn.Module, dim: int, device: torch.device | str) -> None:
        self.head = AuxPoseHead(dim).to(device)
        self._capture = False
        self._tokens: Tensor | None = None
        encoder.register_forward_hook(self._hook, with_kwargs=True)

    def _hook(self, module: nn.Module, args: Any, kwargs: dict[str, Any], output: Tensor) -> None:
        if self._capture:
            pos = kwargs.get("pos_embed")
            self._tokens = output if pos is None else output + pos

    @contextmanager
    def capturing(self) -> Iterator[None]:
        """``with aux.capturing(): model(batch)`` keeps the encoder's output of that forward pass (only then)."""
        self._capture, self._tokens = True, None
        try:
            yield
        finally:
            self._capture = False

    def loss(self, labels: Tensor) -> Tensor:
        """L1 between the head's prediction on the captured tokens and ``labels`` (B, 5), normalised; float32."""
        tokens, self._tokens = self._tokens, None
        if tokens is None:
            raise RuntimeError("no encoder output captured: run the model inside capturing()")
        return (self.head(tokens).float() - labels.float()).abs().mean()

    def save(self, training_state: Path) -> None:
        """The head's weights into ``training_state/`` (:data:`HEAD_FILE`)."""
        from safetensors.torch import save_file

        save_file({k: v.detach().contiguous() for k, v in self.head.state_dict().items()}, training_state / HEAD_FILE)

    def load(self, training_state: Path) -> None:
        """The head's weights from ``training_state/`` (CheckpointError when absent or of another shape)."""
        from safetensors.torch import load_file

        path = training_state / HEAD_FILE
        if not path.is_file():
            raise CheckpointError(f"cannot resume the auxiliary pose head: {path} is missing")
        try:
            self.head.load_state_dict(load_file(str(path), device=str(next(self.head.parameters()).device)))
        except RuntimeError as exc:
            raise CheckpointError(f"cannot resume the auxiliary pose head from {path}: {exc}") from exc
