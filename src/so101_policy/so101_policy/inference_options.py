"""How a LeRobot checkpoint is run when served: ``so101 serve --precision / --compile / --cuda-graph``, the
variants ``so101 bench policy`` times, one place for the three settings and their value checks (what a device or
a policy type refuses, :class:`~.lerobot_policy.LeRobotPolicy` checks when it loads)."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import CheckpointError

PRECISIONS = ("fp32", "bf16", "fp16")


@dataclass(frozen=True)
class InferenceOptions:
    """``precision``: one of :data:`PRECISIONS`; bf16/fp16 run the model under CUDA autocast. ``compile_mode``:
    a ``torch.compile`` mode ("" = none). ``cuda_graph``: ACT on CUDA only, its forward pass (the backbone over
    every camera, encoder, decoder) captured once per batch size into a CUDA graph and replayed at each call
    (:mod:`.graph_runner`); it excludes ``compile_mode`` (whose "reduce-overhead" mode makes CUDA graphs of its
    own) and combines with either precision.

    Raises:
        CheckpointError: an unknown precision, a ``cuda_graph`` that is not a bool, or ``cuda_graph`` with a
            compile mode.
    """

    precision: str = "fp32"
    compile_mode: str = ""
    cuda_graph: bool = False

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise CheckpointError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if not isinstance(self.cuda_graph, bool):
            raise CheckpointError(f"cuda_graph must be true or false, got {self.cuda_graph!r}")
        if self.cuda_graph and self.compile_mode:
            raise CheckpointError(
                f"cuda_graph with compile mode {self.compile_mode!r}: choose one (torch.compile's "
                "reduce-overhead mode makes CUDA graphs of its own)"
            )

    def serve_flags(self) -> str:
        """The ``so101 serve`` flags that select these options, e.g. ``--precision bf16 --cuda-graph``."""
        flags = f"--precision {self.precision}"
        if self.compile_mode:
            flags += f" --compile {self.compile_mode}"
        return flags + (" --cuda-graph" if self.cuda_graph else "")
