"""``so101 serve --cuda-graph``: ACT's forward pass replayed from a CUDA graph per batch size.

On the CPU: the graph runner's bookkeeping (static buffers, a capture per batch size, cloned outputs) with a
stand-in capture that recomputes into the captured output as a replay does; ACT through it serves what the eager
model serves; the forward pass it captures makes no host tensor and no host sync (run on the meta device, where a
host tensor stands out and a sync fails); the option's refusals and its way from the command line to the backend.
On CUDA (skipped elsewhere): real graphs serve the eager chunks, a second batch size captures a second graph, and
later calls replay without running Python."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from so101_core.lerobot_schema import LANGUAGE_KEY
from so101_policy.bench_policy import synthetic_checkpoint
from so101_policy.errors import CheckpointError
from so101_policy.graph_runner import GraphRunner
from so101_policy.inference_options import InferenceOptions
from so101_policy.lerobot_policy import ActPolicy
from so101_policy.protocol import observation
from so101_policy.serve import build_backend, parser
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

CAMERAS = ("side", "top")
TASK = "put the vial in the rack"


def rerun_capture(captures: list[int]) -> Callable[[Callable[[], torch.Tensor]], Any]:
    """A CPU stand-in for :func:`~so101_policy.graph_runner.cuda_capture`: the output of one run, and a replay
    that recomputes it in place from the static inputs ``run`` reads (a CUDA graph's contract)."""

    def capture(run: Callable[[], torch.Tensor]) -> tuple[torch.Tensor, Callable[[], None]]:
        captures.append(1)
        output = run()

        def replay() -> None:
            output.copy_(run())

        return output, replay

    return capture


def batch_observation(rng: np.random.Generator, batch: int, size: tuple[int, int] = (64, 48)) -> dict[str, Any]:
    """``batch`` rows of random frames (``size`` (width, height)) and states."""
    w, h = size
    rows = [
        observation(
            {c: rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for c in CAMERAS}, rng.normal(size=6) * 10, TASK
        )
        for _ in range(batch)
    ]
    return {
        "video": {c: np.concatenate([r["video"][c] for r in rows]) for c in CAMERAS},
        "state": {g: np.concatenate([r["state"][g] for r in rows]) for g in ("single_arm", "gripper")},
        "language": {LANGUAGE_KEY: [[TASK]] * batch},
    }


def chunk(policy: ActPolicy, obs: dict[str, Any]) -> np.ndarray:
    action, _ = policy.get_action(obs, None)
    return np.concatenate([action["single_arm"], action["gripper"]], axis=-1)


def test_the_runner_replays_one_capture_per_signature_from_its_own_buffers() -> None:
    def fn(x: dict[str, torch.Tensor]) -> torch.Tensor:
        return x["a"] * 2 + x["b"].sum(dim=1, keepdim=True)

    captures: list[int] = []
    runner = GraphRunner(fn, capture=rerun_capture(captures), max_graphs=3)
    gen = torch.Generator().manual_seed(0)

    def inputs(batch: int, width: int = 3) -> dict[str, torch.Tensor]:
        return {"a": torch.randn(batch, width, generator=gen), "b": torch.randn(batch, 4, generator=gen)}

    given = [inputs(1), inputs(1), inputs(2), inputs(1), inputs(2)]
    got = [runner(x) for x in given]
    for x, y in zip(given, got, strict=True):  # each call's own inputs, not the capture's, and its own output
        torch.testing.assert_close(y, fn(x))
    assert len(captures) == 2 and sorted(key[0][1][0] for key in runner.graphs) == [1, 2]  # "a"'s batch size
    x = inputs(1, width=5)
    torch.testing.assert_close(runner(x), fn(x))
    assert len(captures) == 3  # another trailing shape is another signature
    x = inputs(3)
    torch.testing.assert_close(runner(x), fn(x))  # beyond max_graphs: the function itself
    assert len(captures) == 3 and len(runner.graphs) == 3


def test_act_through_the_runner_serves_the_eager_chunks(tmp_path: Path) -> None:
    checkpoint = synthetic_checkpoint(tmp_path, 64, 48, cameras=CAMERAS)
    eager = ActPolicy(checkpoint, device="cpu")
    graphed = ActPolicy(checkpoint, device="cpu")
    captures: list[int] = []
    graphed.runner = GraphRunner(graphed._captured_forward, capture=rerun_capture(captures))
    rng = np.random.default_rng(3)
    for batch in (1, 1, 2, 1):
        obs = batch_observation(rng, batch, size=(80, 60))  # frames of another size: resized before the graph
        np.testing.assert_allclose(chunk(graphed, obs), chunk(eager, obs), rtol=1e-5, atol=1e-5)
        assert graphed.backbone is not None and graphed.backbone._primed == []  # the forward used the one pass
        graphed.reset(None)
    assert len(captures) == 2


class HostTensors(TorchDispatchMode):
    """Records every op that reads or makes a non-empty host tensor, and every host sync (``.item()``)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if "_local_scalar_dense" in str(func) or any(
            isinstance(t, torch.Tensor) and t.device.type == "cpu" and t.numel() > 0
            for t in tree_leaves((args, kwargs, out))
        ):
            self.ops.append(str(func))
        return out


def test_the_captured_forward_makes_no_host_tensor_and_no_sync(tmp_path: Path) -> None:
    """A CUDA graph records device work only: a tensor made on the host and copied over at each call (ACT's zero
    latent) cannot be captured, nor a sync. On the meta device every host tensor stands out, a sync fails."""
    policy = ActPolicy(synthetic_checkpoint(tmp_path, 64, 48, cameras=CAMERAS), device="cpu")
    obs = batch_observation(np.random.default_rng(4), 2)
    with torch.inference_mode():
        batch = policy._inputs(policy.pre(policy._batch(obs, TASK)))
        policy.policy.to("meta")
        policy.device = "meta"
        meta = {k: torch.empty_like(v, device="meta") for k, v in batch.items()}
        with HostTensors() as probe:
            torch.zeros(2).to("meta")
        assert probe.ops  # the check sees what it looks for
        with HostTensors() as captured:
            out = policy._captured_forward(meta)
    assert captured.ops == [] and out.shape == (2, 16, 6) and out.dtype == torch.float32


def test_cuda_graph_refusals_and_wiring(tmp_path: Path) -> None:
    checkpoint = synthetic_checkpoint(tmp_path, 64, 48, cameras=CAMERAS)
    with pytest.raises(CheckpointError, match=r"cuda_graph needs CUDA \(device is cpu\)"):
        ActPolicy(checkpoint, device="cpu", options=InferenceOptions(cuda_graph=True))
    with pytest.raises(CheckpointError, match="cuda_graph with compile mode 'reduce-overhead'"):
        InferenceOptions(compile_mode="reduce-overhead", cuda_graph=True)
    with pytest.raises(CheckpointError, match="cuda_graph must be true or false, got 'yes'"):
        InferenceOptions(cuda_graph="yes")  # type: ignore[arg-type]
    args = parser().parse_args(["--checkpoint", str(checkpoint), "--device", "cpu", "--cuda-graph"])
    assert args.cuda_graph is True and parser().parse_args(["--replay", "x.npy"]).cuda_graph is False
    for value, expected in (("true", True), ("false", False), ("1", True), ("False", False)):  # a launch argument
        assert parser().parse_args(["--replay", "x.npy", "--cuda-graph", value]).cuda_graph is expected
    with pytest.raises(CheckpointError, match="cuda_graph needs CUDA"):  # the flag reaches the backend
        build_backend(args)
    with pytest.raises(CheckpointError, match="cuda_graph with compile mode"):
        build_backend(parser().parse_args(["--checkpoint", str(checkpoint), "--cuda-graph", "--compile", "x"]))
    with pytest.raises(SystemExit):
        parser().parse_args(["--checkpoint", str(checkpoint), "--cuda-graph=yes"])
    assert InferenceOptions("bf16", cuda_graph=True).serve_flags() == "--precision bf16 --cuda-graph"


def test_so101_serve_passes_the_inference_options_on(tmp_path: Path) -> None:
    from so101_cli.main import app
    from typer.testing import CliRunner

    checkpoint = synthetic_checkpoint(tmp_path, 64, 48, cameras=CAMERAS)
    runner = CliRunner()
    result = runner.invoke(app, ["serve", "--checkpoint", str(checkpoint), "--device", "cpu", "--cuda-graph"])
    assert result.exit_code == 2 and "cuda_graph needs CUDA" in result.output
    result = runner.invoke(app, ["serve", "--checkpoint", str(checkpoint), "--device", "cpu", "--precision", "bf16"])
    assert result.exit_code == 2 and "precision bf16 needs CUDA" in result.output
    result = runner.invoke(app, ["serve", "--checkpoint", str(checkpoint), "--cuda-graph", "--compile", "default"])
    assert result.exit_code == 2 and "cuda_graph with compile mode 'default'" in result.output


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need CUDA")
@pytest.mark.parametrize(("precision", "tolerance"), [("fp32", 1e-4), ("bf16", 5e-2)])
def test_cuda_graphs_serve_the_eager_chunks_and_replay_without_python(
    precision: str, tolerance: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)  # full fp32: any difference is a real one
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    checkpoint = synthetic_checkpoint(tmp_path, 64, 48, cameras=CAMERAS)
    eager = ActPolicy(checkpoint, device="cuda", options=InferenceOptions(precision))
    graphed = ActPolicy(checkpoint, device="cuda", options=InferenceOptions(precision, cuda_graph=True))
    assert graphed.runner is not None and graphed.backbone is not None
    runs: list[int] = []
    graphed.backbone.conv1.register_forward_hook(lambda m, a, out: runs.append(a[0].shape[0]))
    rng = np.random.default_rng(5)
    for batch in (1, 1, 2, 1, 2, 2):
        obs = batch_observation(rng, batch)
        np.testing.assert_allclose(chunk(graphed, obs), chunk(eager, obs), rtol=tolerance, atol=tolerance)
        graphed.reset(None)  # ACT's action queue: nothing the graph reads
    assert sorted(key[0][1][0] for key in graphed.runner.graphs) == [1, 2]  # a second batch size, a second graph
    # Python ran the backbone (one pass over both cameras) in each capture's warm-up runs and in the capture
    # itself, never in a replay
    assert runs == [2] * 4 + [4] * 4
