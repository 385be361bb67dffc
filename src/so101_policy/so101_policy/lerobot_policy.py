"""A LeRobot checkpoint behind the policy-server interface: N1.6 observation in dataset units → action chunk.

:func:`load_policy` reads the checkpoint's policy type (``config.json``, :func:`.policy_types.checkpoint_type`)
and loads it as :class:`ActPolicy` or :class:`DiffusionBackend` (both :class:`LeRobotPolicy`). The checkpoint's
config names its cameras (``observation.images.<cam>``) and image size; incoming frames of another size are resized
(bilinear) to it. ``get_action`` returns the whole predicted chunk (``horizon`` steps: ACT's ``chunk_size``,
Diffusion Policy's ``n_action_steps``); the policy node executes the first ones of them.

Frames travel to the device as uint8 and are converted and resized there. How the model runs is an
:class:`~.inference_options.InferenceOptions`. ACT: ``precision`` "bf16"/"fp16" runs the model under CUDA autocast
(normalisation and the returned actions stay float32); ``compile_mode`` (e.g. "reduce-overhead") wraps the model
in ``torch.compile``; ``cuda_graph`` replays its forward pass on the normalised batch (the backbone pass over every
camera included) from a CUDA graph captured per batch size (:class:`~.graph_runner.GraphRunner`): the first call
of a batch size captures (``so101 serve``'s warm-up), later ones copy their inputs into the graph's buffers and
replay it, without the host launching each of its few hundred kernels. ACT's inference is deterministic (no VAE
sampling: its latent is zero), so the graph computes what the eager model does. Diffusion Policy is served in
fp32, eagerly (other options are refused): each chunk is sampled from fresh noise in ``num_inference_steps``
denoising steps, each one UNet pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from so101_core.lerobot_schema import OBS_STATE, camera_of, image_key

from .act_training import CameraBatchedBackbone, fold_frozen_norms
from .checkpoints import pretrained_dir
from .diffusion_training import with_observation_step
from .errors import CheckpointError
from .graph_runner import GraphRunner
from .inference_options import PRECISIONS, InferenceOptions
from .policy_types import checkpoint_type, lerobot_class
from .protocol import check_observation
from .train import resolve_device


class LeRobotPolicy:
    """Load ``checkpoint`` (run dir, checkpoint dir or pretrained_model dir) of this class's policy type onto
    ``device``, run as ``options`` say; a subclass prepares the model for inference (:meth:`_prepare`) and the
    batch (:meth:`_inputs`, :meth:`_prime`).

    Raises:
        CheckpointError: the checkpoint cannot be loaded, or ``options`` this policy type or device cannot run
            (bf16/fp16 or ``cuda_graph`` off CUDA; an option the policy type is served without).
    """

    kind: ClassVar[str]  # the LeRobot policy type served
    precisions: ClassVar[tuple[str, ...]] = PRECISIONS
    compiles: ClassVar[bool] = True
    graphs: ClassVar[bool] = True  # served from CUDA graphs on request (options.cuda_graph)
    eager_reason: ClassVar[str] = ""  # why a policy type without ``graphs`` is served eagerly

    def __init__(self, checkpoint: str | Path, device: str = "auto", options: InferenceOptions | None = None) -> None:
        import torch
        from lerobot.policies import make_pre_post_processors

        options = options or InferenceOptions()
        path = pretrained_dir(Path(checkpoint))
        self.device = resolve_device(device)
        precision = options.precision
        if precision not in self.precisions:
            raise CheckpointError(f"precision {precision}: {self.kind} is served in {list(self.precisions)} only")
        if options.compile_mode and not self.compiles:
            raise CheckpointError(f"compile mode {options.compile_mode!r}: {self.kind} is served without torch.compile")
        if options.cuda_graph and not self.graphs:
            raise CheckpointError(f"cuda_graph: {self.kind} is served without CUDA graphs ({self.eager_reason})")
        on_cuda = self.device.startswith("cuda")
        if precision != "fp32" and not on_cuda:
            raise CheckpointError(f"precision {precision} needs CUDA (device is {self.device})")
        if options.cuda_graph and not on_cuda:
            raise CheckpointError(f"cuda_graph needs CUDA (device is {self.device})")
        kind = checkpoint_type(path)
        if kind != self.kind:
            raise CheckpointError(f"{path} holds a {kind} policy, not {self.kind}: load it with load_policy")
        self.options = options
        self.precision = precision
        if on_cuda:
            torch.backends.cudnn.benchmark = True  # fixed input shapes: pick the fastest convolutions once
        try:
            policy = lerobot_class(kind).from_pretrained(str(path))
        except Exception as exc:
            raise CheckpointError(f"cannot load {kind} from {path}: {type(exc).__name__}: {exc}") from exc
        policy.config.device = self.device
        self.torch = torch
        self.policy = policy.to(self.device).eval()
        self._prepare(options.compile_mode)
        # the forward pass from a CUDA graph per batch size, captured at the first call of that size
        self.runner = GraphRunner(self._captured_forward) if options.cuda_graph else None
        self.pre, self.post = make_pre_post_processors(
            policy.config,
            pretrained_path=str(path),
            preprocessor_overrides={"device_processor": {"device": self.device}},
        )
        images = list(policy.config.image_features)
        self.cameras = tuple(camera_of(k) for k in images)
        self.image_shapes = {k: tuple(policy.config.image_features[k].shape) for k in images}  # (3, H, W)
        self.horizon = self._chunk_length()
        self.checkpoint = path

    def _prepare(self, compile_mode: str) -> None:
        """Make ``self.policy`` ready for inference (after loading, on the device)."""

    def _inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The preprocessed ``batch`` as the policy's ``predict_action_chunk`` takes it."""
        return batch

    def _prime(self, batch: dict[str, Any]) -> None:
        """Work of the forward pass done before ``predict_action_chunk`` (ACT: the backbone over every camera)."""

    def _forward(self, batch: dict[str, Any]) -> Any:
        """The normalised chunk (B, H, 6) float32 of the policy's input ``batch`` (:meth:`_inputs`), under
        autocast in bf16/fp16. Without autocast's cache of cast weights: a CUDA graph must not keep casts made
        while it was captured (PyTorch's note), and ACT uses each weight about once a pass."""
        torch = self.torch
        half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision)
        with torch.autocast("cuda", dtype=half or torch.float32, enabled=half is not None, cache_enabled=False):
            self._prime(batch)
            return self.policy.predict_action_chunk(batch).float()

    def _captured_forward(self, batch: dict[str, Any]) -> Any:
        """:meth:`_forward` as a CUDA graph records it: a tensor made without a device is made on the policy's
        (ACT makes its zero latent on the host and copies it over at each call: a copy from host memory cannot
        be recorded, and the graph needs no host data)."""
        with self.torch.device(self.device):
            return self._forward(batch)

    def _chunk_length(self) -> int:
        raise NotImplementedError

    def image_size(self) -> tuple[int, int]:
        """(width, height) px of the images the policy was trained on (first camera)."""
        _, h, w = next(iter(self.image_shapes.values()))
        return w, h

    def _batch(self, obs: dict[str, Any], task: str) -> dict[str, Any]:
        """The newest observation of each row: state (B, 6) float32, each camera (B, 3, H, W) float32 in [0, 1] on
        the device at the training size."""
        torch = self.torch
        state = np.concatenate([obs["state"]["single_arm"][:, -1], obs["state"]["gripper"][:, -1]], axis=1)
        batch: dict[str, Any] = {OBS_STATE: torch.as_tensor(state, dtype=torch.float32), "task": task}
        for cam in self.cameras:
            key = image_key(cam)
            frames = torch.as_tensor(np.ascontiguousarray(obs["video"][cam][:, -1]))  # (B, H, W, 3) uint8
            frames = frames.to(self.device, non_blocking=False)
            img = frames.permute(0, 3, 1, 2).to(torch.float32) / 255.0
            _, h, w = self.image_shapes[key]
            if img.shape[-2:] != (h, w):
                img = torch.nn.functional.interpolate(img, size=(h, w), mode="bilinear", align_corners=False)
            batch[key] = img
        return batch

    def get_action(self, observation: dict[str, Any], options: dict[str, Any] | None) -> tuple[dict, dict]:
        """Chunk ``{"single_arm": (B, H, 5), "gripper": (B, H, 1)}`` float32 in dataset units."""
        _, task = check_observation(observation, self.cameras)
        with self.torch.inference_mode():
            batch = self._inputs(self.pre(self._batch(observation, task)))
            chunk = self._forward(batch) if self.runner is None else self.runner(batch)  # (B, H, 6) normalised
            actions = self.post(chunk).to("cpu", self.torch.float32).numpy()
        return {"single_arm": actions[:, :, :5], "gripper": actions[:, :, 5:]}, {}

    def reset(self, options: dict[str, Any] | None) -> dict[str, Any]:
        self.policy.reset()
        return {}


class ActPolicy(LeRobotPolicy):
    """An ACT checkpoint: the backbone's norms folded into its convolutions, every camera in one pass."""

    kind = "act"

    def _prepare(self, compile_mode: str) -> None:
        policy = self.policy
        self.backbone = self._fast_backbone(policy) if policy.config.image_features else None
        if compile_mode:
            policy.model = self.torch.compile(policy.model, mode=compile_mode)

    def _chunk_length(self) -> int:
        return int(self.policy.config.chunk_size)

    def _fast_backbone(self, policy: Any) -> CameraBatchedBackbone:
        """The backbone for inference: norm layers folded into the convolutions, every camera in one pass,
        channels-last on CUDA (the same numbers as the checkpoint's model, to float rounding)."""
        fold_frozen_norms(policy.model.backbone)
        backbone = CameraBatchedBackbone.adopt(policy.model.backbone)
        if self.device.startswith("cuda"):
            backbone.to(memory_format=self.torch.channels_last)
        return backbone

    def _inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The batch's tensors (the state, each camera's images): all ACT reads, a CUDA graph's inputs."""
        return {k: v for k, v in batch.items() if isinstance(v, self.torch.Tensor)}

    def _prime(self, batch: dict[str, Any]) -> None:
        if self.backbone is not None:
            self.backbone.prime([batch[k] for k in self.policy.config.image_features])


class DiffusionBackend(LeRobotPolicy):
    """A Diffusion Policy checkpoint (one observation step), fp32. Its observation queues stay empty (only
    ``predict_action_chunk`` is called), so LeRobot takes the batch as given: the state gets its time axis here
    ((B, 1, 6)), the images (B, 3, H, W) get theirs in LeRobot."""

    kind = "diffusion"
    precisions = ("fp32",)
    compiles = False
    graphs = False
    eager_reason = "each chunk is sampled from fresh noise, its scheduler stepped on the host"

    def _chunk_length(self) -> int:
        return int(self.policy.config.n_action_steps)

    def _inputs(self, batch: dict[str, Any]) -> dict[str, Any]:
        return with_observation_step(batch)


BACKENDS: dict[str, type[LeRobotPolicy]] = {cls.kind: cls for cls in (ActPolicy, DiffusionBackend)}


def load_policy(checkpoint: str | Path, device: str = "auto", options: InferenceOptions | None = None) -> LeRobotPolicy:
    """The checkpoint (run dir, checkpoint dir or pretrained_model dir) as the backend of its policy type, run as
    ``options`` say (default: fp32, eager)."""
    kind = checkpoint_type(pretrained_dir(Path(checkpoint)))
    return BACKENDS[kind](checkpoint, device=device, options=options)
