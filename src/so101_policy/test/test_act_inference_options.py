"""ACT inference options: precision needs CUDA (a clear error on CPU), unknown values are refused, and the
policy benchmark reports each measured variant with the serve flags of the best one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from so101_policy.backend import warmup_observation
from so101_policy.bench_policy import (
    HEADLINE_MAX_ABS_DIFF,
    headline_variant,
    run_policy_benchmark,
    synthetic_checkpoint,
)
from so101_policy.errors import CheckpointError
from so101_policy.inference_options import InferenceOptions
from so101_policy.lerobot_policy import ActPolicy
from so101_policy.protocol import observation
from so101_policy.serve import parser


def test_precision_is_checked_and_fp32_serves_on_cpu(tmp_path: Path) -> None:
    checkpoint = synthetic_checkpoint(tmp_path, 64, 48, cameras=("top",))
    with pytest.raises(CheckpointError, match="needs CUDA"):
        ActPolicy(checkpoint, device="cpu", options=InferenceOptions("bf16"))
    with pytest.raises(CheckpointError, match="precision must be one of"):
        ActPolicy(checkpoint, device="cpu", options=InferenceOptions("int4"))
    policy = ActPolicy(checkpoint, device="cpu")
    obs = observation({"top": np.zeros((96, 128, 3), np.uint8)}, np.zeros(6), "put the vial in the rack")
    action, _ = policy.get_action(obs, None)  # a frame of another size is resized on the device
    assert action["single_arm"].shape == (1, 16, 5) and action["single_arm"].dtype == np.float32
    warm = warmup_observation(policy)  # what `so101 serve` warms the model up on: its cameras at its image size
    assert list(warm["video"]) == ["top"] and warm["video"]["top"].shape == (1, 1, 48, 64, 3)
    assert policy.get_action(warm, None)[0]["gripper"].shape == (1, 16, 1)
    args = parser().parse_args(["--checkpoint", str(checkpoint), "--precision", "bf16", "--compile", "reduce-overhead"])
    assert (args.precision, args.compile) == ("bf16", "reduce-overhead")


def test_benchmark_reports_its_variants() -> None:
    out = run_policy_benchmark(None, "cpu", calls=3, width=64, height=48, jitter_s=0.0, full_resolution=True)
    variants = out["inference_variants"]
    assert [(v["precision"], v["compile_mode"], v["cuda_graph"]) for v in variants] == [("fp32", "", False)]  # CPU
    assert variants[0]["max_abs_diff_vs_fp32_eager"] == 0.0  # the reference itself: the same model, input and device
    assert out["inference_ms_p99"] == variants[0]["inference_ms"]["p99"] > 0
    assert out["inference_serve_flags"] == "--precision fp32"


def test_the_headline_is_the_fastest_variant_that_commands_what_eager_fp32_commands() -> None:
    def variant(name: str, p99: float, diff: float | None) -> dict:
        v = {"name": name, "inference_ms": {"p99": p99}}
        return v if diff is None else {**v, "max_abs_diff_vs_fp32_eager": diff}

    eager, graph = variant("fp32", 20.0, 0.0), variant("fp32+graph", 12.0, 1e-5)
    bf16 = variant("bf16+graph", 8.0, 4 * HEADLINE_MAX_ABS_DIFF)  # faster, but off by four servo counts
    failed = {"name": "bf16", "error": "RuntimeError('no kernel')"}
    assert headline_variant([eager, bf16, failed, graph])["name"] == "fp32+graph"
    assert headline_variant([eager, variant("bf16", 9.0, HEADLINE_MAX_ABS_DIFF)])["name"] == "bf16"  # at the bound
    assert headline_variant([eager, variant("unchecked", 1.0, None)])["name"] == "fp32"
    with pytest.raises(ValueError, match="within"):
        headline_variant([bf16, failed])


def test_folded_norms_and_one_backbone_pass_predict_what_stock_lerobot_predicts(tmp_path: Path) -> None:
    import torch
    from lerobot.policies.act.modeling_act import ACTPolicy
    from torchvision.ops.misc import FrozenBatchNorm2d

    checkpoint = synthetic_checkpoint(tmp_path, 64, 48, cameras=("side", "top"))
    stock = ACTPolicy.from_pretrained(str(checkpoint))
    gen = torch.Generator().manual_seed(0)
    for layer in stock.modules():  # statistics that are not the identity's, as a trained BatchNorm leaves them
        if isinstance(layer, FrozenBatchNorm2d):
            n = layer.weight.numel()
            layer.weight.copy_(1 + 0.2 * torch.randn(n, generator=gen))
            layer.bias.copy_(0.1 * torch.randn(n, generator=gen))
            layer.running_mean.copy_(0.1 * torch.randn(n, generator=gen))
            layer.running_var.copy_(1 + 0.3 * torch.rand(n, generator=gen))
    stock.save_pretrained(checkpoint)
    stock = ACTPolicy.from_pretrained(str(checkpoint)).eval()
    fast = ActPolicy(checkpoint, device="cpu")
    assert not any(isinstance(m, FrozenBatchNorm2d) for m in fast.policy.modules())  # folded into the convolutions
    rng = np.random.default_rng(1)
    frames = {c: rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for c in ("side", "top")}
    obs = observation(frames, rng.normal(size=6) * 10, "put the vial in the rack")
    got = fast.get_action(obs, None)[0]
    batch = fast.pre(fast._batch(obs, "put the vial in the rack"))
    with torch.no_grad():
        want = fast.post(stock.predict_action_chunk(batch)).numpy()
    np.testing.assert_allclose(got["single_arm"], want[:, :, :5], rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got["gripper"], want[:, :, 5:], rtol=1e-4, atol=1e-3)


def test_a_compiled_policy_serves_new_images_without_recompiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--compile``: each call brings new image tensors; the camera-batched backbone must not make dynamo guard on
    them (it recompiled at every call until its recompile limit when it looked the images up by ``id()``). Dynamo's
    guards are the same whatever backend compiles the graph: the test uses the eager backend (no C++ build)."""
    import torch
    import torch._dynamo

    compile_ = torch.compile
    monkeypatch.setattr(torch, "compile", lambda model, mode=None: compile_(model, backend="eager"))
    checkpoint = synthetic_checkpoint(tmp_path, 64, 48, cameras=("side", "top"))
    compiled = ActPolicy(checkpoint, device="cpu", options=InferenceOptions(compile_mode="reduce-overhead"))
    plain = ActPolicy(checkpoint, device="cpu")
    assert compiled.backbone is not None
    passes: list[int] = []
    compiled.backbone.conv1.register_forward_hook(lambda m, args, out: passes.append(args[0].shape[0]))
    rng = np.random.default_rng(2)
    torch._dynamo.reset()
    with torch._dynamo.config.patch(error_on_recompile=True):
        for _ in range(3):
            frames = {c: rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for c in ("side", "top")}
            obs = observation(frames, rng.normal(size=6), "put the vial in the rack")
            got = compiled.get_action(obs, None)[0]
            np.testing.assert_allclose(got["single_arm"], plain.get_action(obs, None)[0]["single_arm"], atol=1e-4)
    assert passes == [2, 2, 2]  # one pass over both cameras per call: the compiled forward used the primed features
    assert compiled.backbone._primed == []
