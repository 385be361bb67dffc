"""ACT inference options: precision needs CUDA (a clear error on CPU), unknown values are refused, and the
policy benchmark reports each measured variant with the serve flags of the best one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from so101_policy.act_policy import ActPolicy
from so101_policy.backend import warmup_observation
from so101_policy.bench_policy import run_policy_benchmark, synthetic_checkpoint
from so101_policy.errors import CheckpointError
from so101_policy.protocol import observation
from so101_policy.serve import parser


def test_precision_is_checked_and_fp32_serves_on_cpu(tmp_path: Path) -> None:
    checkpoint = synthetic_checkpoint(tmp_path, 64, 48, cameras=("top",))
    with pytest.raises(CheckpointError, match="needs CUDA"):
        ActPolicy(checkpoint, device="cpu", precision="bf16")
    with pytest.raises(CheckpointError, match="precision must be one of"):
        ActPolicy(checkpoint, device="cpu", precision="int4")
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
    assert [(v["precision"], v["compile_mode"]) for v in variants] == [("fp32", "")]  # CPU: fp32 only
    assert out["inference_ms_p99"] == variants[0]["inference_ms"]["p99"] > 0
    assert out["inference_serve_flags"] == "--precision fp32"
