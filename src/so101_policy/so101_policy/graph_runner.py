"""A forward pass replayed from a capture: CUDA graphs for ``so101 serve --cuda-graph``.

:class:`GraphRunner` calls ``fn(inputs)`` (a dict of tensors → one tensor) through one capture per input
signature (names, shapes, dtypes, devices; in serving only the batch size varies): the first call of a signature
clones its inputs into static buffers and captures ``fn`` reading them; every call copies its inputs into that
capture's buffers, replays it and returns a clone of its output (the replay rewrites the same output tensor).
``capture`` is the only device-specific part: :func:`cuda_capture` records ``fn`` into a ``torch.cuda.CUDAGraph``
after warm-up runs on a side stream (PyTorch's CUDA-graph notes: lazy initialisation, cuDNN autotuning and
allocations happen there, not in the capture). Any function of the inputs' values alone can be captured: no
host synchronisation, no tensor made from host data at each call, no data-dependent control flow, since a replay
runs the recorded kernels only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import Tensor

Capture = Callable[[Callable[[], "Tensor"]], tuple["Tensor", Callable[[], None]]]
"""``capture(run)`` → ``(output, replay)``: ``run()`` computes the output from the static inputs it reads;
``replay()`` recomputes it into that same ``output`` tensor from their current values."""

Signature = tuple[tuple[str, tuple[int, ...], str, str], ...]


def cuda_capture(run: Callable[[], Tensor], warmup_runs: int = 3) -> tuple[Tensor, Callable[[], None]]:
    """``run`` captured into a CUDA graph on the current device, after ``warmup_runs`` runs on a side stream."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup_runs):
            run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        output = run()
    return output, graph.replay


@dataclass(frozen=True)
class Captured:
    """One capture: its static ``inputs`` (name → tensor), the ``output`` its ``replay`` rewrites."""

    inputs: dict[str, Tensor]
    output: Tensor
    replay: Callable[[], None]


def signature(inputs: dict[str, Tensor]) -> Signature:
    """What a capture is keyed on: each input's name, shape, dtype and device."""
    return tuple((k, tuple(v.shape), str(v.dtype), str(v.device)) for k, v in sorted(inputs.items()))


class GraphRunner:
    """``fn`` replayed from a capture per input signature (see the module docstring). Beyond ``max_graphs``
    signatures (each capture holds its own device memory) a call runs ``fn`` directly."""

    def __init__(
        self, fn: Callable[[dict[str, Tensor]], Tensor], capture: Capture = cuda_capture, max_graphs: int = 8
    ) -> None:
        self.fn = fn
        self.capture = capture
        self.max_graphs = max_graphs
        self.graphs: dict[Signature, Captured] = {}

    def __call__(self, inputs: dict[str, Tensor]) -> Tensor:
        key = signature(inputs)
        captured = self.graphs.get(key)
        if captured is None:
            if len(self.graphs) >= self.max_graphs:
                return self.fn(inputs)
            captured = self.graphs[key] = self._capture(inputs)
        for name, value in inputs.items():
            captured.inputs[name].copy_(value)
        captured.replay()
        return captured.output.clone()

    def _capture(self, inputs: dict[str, Tensor]) -> Captured:
        static = {name: value.clone() for name, value in inputs.items()}
        output, replay = self.capture(lambda: self.fn(static))
        return Captured(static, output, replay)
