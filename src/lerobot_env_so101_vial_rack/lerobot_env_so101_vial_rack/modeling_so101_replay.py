"""A LeRobot policy that replays a recorded action sequence: ``select_action`` returns row ``k`` of the recorded
(N, 6) actions (LeRobot units) at the ``k``-th call since ``reset`` (the last row after the end), for every
environment of the batch. It looks at nothing, so what it scores is what the recording scores on each scene: the
same policy :class:`so101_policy.replay_policy.ReplayPolicy` is for ``so101 eval``.

:func:`save_replay_policy` writes it as a checkpoint directory that ``lerobot-eval --policy.path`` loads
(``config.json``, ``model.safetensors`` holding the actions, and the pre/post-processor files LeRobot expects).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from lerobot.configs import FeatureType, PolicyFeature
from lerobot.policies.pretrained import PreTrainedPolicy
from lerobot.processor import AddBatchDimensionProcessorStep, DeviceProcessorStep, RenameObservationsProcessorStep
from lerobot.processor.factory import make_policy_processor_pipelines
from lerobot.utils.constants import ACTION, OBS_STATE
from torch import Tensor

from .configuration_so101_replay import JOINTS, POLICY_TYPE, So101ReplayConfig


class So101ReplayPolicy(PreTrainedPolicy):
    """Replay ``config.steps`` recorded actions (see the module docstring)."""

    config_class = So101ReplayConfig
    name = POLICY_TYPE

    def __init__(self, config: So101ReplayConfig, **kwargs: Any) -> None:
        super().__init__(config)
        config.validate_features()
        self.config: So101ReplayConfig = config
        self.register_buffer("actions", torch.zeros(config.steps, JOINTS))
        self.calls = 0

    @classmethod
    def _load_as_safetensor(cls, model: Any, model_file: str, map_location: str, strict: bool) -> Any:
        """Strictly: a checkpoint without its actions is an error, never a replay of zeros."""
        return super()._load_as_safetensor(model, model_file, map_location, True)

    def get_optim_params(self) -> dict:
        return {}

    def reset(self) -> None:
        self.calls = 0

    def _rows(self, start: int, n: int, batch: dict[str, Tensor]) -> Tensor:
        """(B, n, 6): rows ``start .. start + n - 1``, the last row after the end."""
        b = batch[OBS_STATE].shape[0]
        idx = torch.clamp(torch.arange(start, start + n), max=self.config.steps - 1)
        actions: Tensor = self.get_buffer("actions")
        return actions[idx].unsqueeze(0).expand(b, n, JOINTS).clone()

    def predict_action_chunk(self, batch: dict[str, Tensor], **kwargs: Any) -> Tensor:
        return self._rows(self.calls, self.config.chunk_size, batch)

    def select_action(self, batch: dict[str, Tensor], **kwargs: Any) -> Tensor:
        """(B, 6): the recorded action of this step."""
        action = self._rows(self.calls, 1, batch)[:, 0]
        self.calls += 1
        return action

    def forward(self, batch: dict[str, Tensor]) -> tuple[Tensor, dict | None]:
        raise NotImplementedError("so101_replay replays recorded actions: there is nothing to train")


def save_replay_policy(actions: npt.ArrayLike, out_dir: Path, chunk_size: int = 1) -> Path:
    """Write ``actions`` (N, 6) in LeRobot units (arm degrees, gripper 0..100) as a ``so101_replay`` checkpoint
    directory ``out_dir`` for ``lerobot-eval --policy.path``; returns ``out_dir``.

    Raises:
        ValueError: ``actions`` not a finite (N, 6) array with N >= 1.
    """
    a = np.asarray(actions, dtype=np.float32)
    if a.ndim != 2 or a.shape[1] != JOINTS or len(a) == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"so101_replay: actions must be finite (N, {JOINTS}) with N >= 1, got {a.shape}")
    config = So101ReplayConfig(
        steps=len(a),
        chunk_size=chunk_size,
        device="cpu",
        input_features={OBS_STATE: PolicyFeature(type=FeatureType.STATE, shape=(JOINTS,))},
        output_features={ACTION: PolicyFeature(type=FeatureType.ACTION, shape=(JOINTS,))},
    )
    policy = So101ReplayPolicy(config)
    policy.get_buffer("actions").copy_(torch.from_numpy(a))
    out_dir = Path(out_dir)
    policy.save_pretrained(out_dir)
    pre, post = make_policy_processor_pipelines(
        input_steps=[
            RenameObservationsProcessorStep(rename_map={}),
            AddBatchDimensionProcessorStep(),
            DeviceProcessorStep(device="cpu"),
        ],
        output_steps=[DeviceProcessorStep(device="cpu")],
    )
    pre.save_pretrained(out_dir)
    post.save_pretrained(out_dir)
    return out_dir
