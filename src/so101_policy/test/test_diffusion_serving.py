"""Diffusion Policy end to end on a tiny dataset, on the CPU: ``train_policy`` writes a checkpoint that stock
LeRobot loads and whose own inference (``select_action``, its observation queues) gives, for the same noise seed,
the chunk our backend serves; a run resumes from its last checkpoint and refuses another policy type; the fast
evaluator runs an episode of it; the policy server answers ``get_action`` for it over a real ZMQ socket; the
policy benchmark times it."""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from so101_policy.backend import warmup_observation
from so101_policy.bench_policy import inference_latency, synthetic_checkpoint
from so101_policy.checkpoints import PRETRAINED, last_checkpoint
from so101_policy.client import PolicyClient
from so101_policy.config import EvalConfig, TrainConfig
from so101_policy.errors import CheckpointError, ConfigError
from so101_policy.evaluate import checkpoint_spec
from so101_policy.fast_eval import evaluate_checkpoint_fast
from so101_policy.lerobot_policy import ActPolicy, DiffusionBackend, load_policy
from so101_policy.protocol import observation
from so101_policy.serve import build_backend, parser
from so101_policy.server import PolicyServer, ServerConfig
from so101_policy.testing.dataset import TASK, make_dataset
from so101_policy.train import train_policy

CHUNK = 8
TINY = TrainConfig(
    policy="diffusion", steps=4, save_freq=2, log_freq=2, batch_size=4, num_workers=0, chunk_size=CHUNK,
    diffusion_down_dims=(16, 32), diffusion_keypoints=4, diffusion_train_timesteps=20, diffusion_inference_steps=3,
    lr=1e-3, lr_backbone=1e-3, device="cpu", system_metrics=False, log_checkpoints=False, cameras=("top",),
)  # fmt: skip
TINY_ACT = TrainConfig(
    steps=2, save_freq=2, log_freq=2, batch_size=4, num_workers=0, chunk_size=CHUNK, dim_model=16, dim_feedforward=32,
    n_heads=2, n_encoder_layers=1, latent_dim=4, device="cpu", system_metrics=False, log_checkpoints=False,
    cameras=("top",),
)  # fmt: skip


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("ds") / "ds", frames=20)


@pytest.fixture(scope="module")
def run(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dp") / "run"
    result = train_policy(dataset, out, TINY)
    assert result.steps == 4 and np.isfinite(result.final_loss) and result.checkpoint_dir == last_checkpoint(out)
    return out


def _obs(rows: int, seed: int) -> dict[str, Any]:
    """``rows`` observations at the dataset's image size, states within its range (LeRobot units)."""
    rng = np.random.default_rng(seed)
    frames = [rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for _ in range(rows)]
    states = rng.uniform(-15, 15, (rows, 6)).astype(np.float32)
    obs = observation({"top": frames[0]}, states[0], TASK)
    obs["video"]["top"] = np.stack(frames)[:, None]
    obs["state"] = {"single_arm": states[:, None, :5], "gripper": states[:, None, 5:]}
    obs["language"]["annotation.human.task_description"] = [[TASK]] * rows
    return obs


def test_the_checkpoint_loads_in_stock_lerobot_and_its_inference_is_what_we_serve(run: Path) -> None:
    from lerobot.policies import make_pre_post_processors
    from lerobot.policies.diffusion.modeling_diffusion import DiffusionPolicy

    pretrained = last_checkpoint(run) / PRETRAINED  # type: ignore[operator]
    stock = DiffusionPolicy.from_pretrained(str(pretrained)).eval()
    pre, post = make_pre_post_processors(stock.config, pretrained_path=str(pretrained))
    ours = load_policy(run, device="cpu")
    assert isinstance(ours, DiffusionBackend)
    assert (ours.cameras, ours.horizon, ours.image_size()) == (("top",), CHUNK, (64, 48))
    obs = _obs(2, seed=1)
    torch.manual_seed(11)
    got, _ = ours.get_action(obs, None)
    assert got["single_arm"].shape == (2, CHUNK, 5) and got["gripper"].shape == (2, CHUNK, 1)

    # stock LeRobot's own online inference: one observation, the chunk popped action by action from its queue
    frames = torch.as_tensor(obs["video"]["top"][:, -1]).permute(0, 3, 1, 2).float() / 255.0
    state = np.concatenate([obs["state"]["single_arm"][:, -1], obs["state"]["gripper"][:, -1]], axis=1)
    batch = pre({"observation.state": torch.as_tensor(state), "observation.images.top": frames, "task": TASK})
    stock.reset()
    torch.manual_seed(11)
    with torch.no_grad():
        chunk = torch.stack([stock.select_action(dict(batch)) for _ in range(CHUNK)], dim=1)  # (B, CHUNK, 6)
    want = post(chunk).numpy()
    np.testing.assert_allclose(got["single_arm"], want[:, :, :5], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got["gripper"], want[:, :, 5:], rtol=1e-5, atol=1e-4)
    torch.manual_seed(12)  # other noise, another chunk: the seed, not a constant output, made them equal
    assert not np.allclose(ours.get_action(obs, None)[0]["single_arm"], got["single_arm"], atol=1e-3)
    with pytest.raises(CheckpointError, match="holds a diffusion policy, not act"):
        ActPolicy(run, device="cpu")


def test_a_policy_type_not_served_here_is_named(tmp_path: Path) -> None:
    from lerobot.policies import VQBeTConfig

    VQBeTConfig(device="cpu", push_to_hub=False)._save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(CheckpointError, match=r"holds a 'vqbet' policy; served here: \['act', 'diffusion'\]"):
        load_policy(tmp_path, device="cpu")


def test_a_run_resumes_from_its_last_checkpoint_and_refuses_another_policy_type(
    run: Path, dataset: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "dp"
    shutil.copytree(run, copy, symlinks=True)  # checkpoints/last stays a link
    again = train_policy(dataset, copy, dataclasses.replace(TINY, steps=6))
    assert (again.resumed_from, again.steps) == (4, 6) and last_checkpoint(copy).name == "000006"  # type: ignore[union-attr]
    lines = [json.loads(x) for x in (copy / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [2, 4, 6]  # continued, not restarted
    with pytest.raises(ConfigError, match=r"train\.policy: the run in this directory trains 'diffusion', not 'act'"):
        train_policy(dataset, copy, dataclasses.replace(TINY_ACT, steps=8))
    act = tmp_path / "act"
    train_policy(dataset, act, TINY_ACT)
    with pytest.raises(ConfigError, match=r"train\.policy: the run in this directory trains 'act', not 'diffusion'"):
        train_policy(dataset, act, dataclasses.replace(TINY, steps=4))
    saved = act / "checkpoints" / "last" / PRETRAINED / "so101_train_config.json"
    legacy = json.loads(saved.read_text())
    del legacy["policy"]  # a run written before the field existed trained ACT
    saved.write_text(json.dumps(legacy))
    with pytest.raises(ConfigError, match=r"trains 'act', not 'diffusion'"):
        train_policy(dataset, act, dataclasses.replace(TINY, steps=4))


def test_the_fast_evaluator_runs_an_episode_of_the_checkpoint(run: Path, tmp_path: Path) -> None:
    cfg = EvalConfig(episodes=1, seed=1984, episode_s=0.3, device="cpu", videos=0, randomize=False)
    result = evaluate_checkpoint_fast(run, tmp_path / "fast", cfg, envs=1)
    assert result.episodes == 1 and result.success_rate == 0.0  # 9 steps cannot put a vial in the rack
    rows = [json.loads(x) for x in (tmp_path / "fast" / "fast_episodes.jsonl").read_text().splitlines()]
    assert len(rows) == 1 and rows[0]["queries"] >= 1 and rows[0]["steps"] >= 1
    assert json.loads((tmp_path / "fast" / "fast_results.json").read_text())["image_size"] == [64, 48]


def test_the_server_answers_get_action_over_zmq(run: Path) -> None:
    with pytest.raises(CheckpointError, match=r"precision bf16: diffusion is served in \['fp32'\] only"):
        build_backend(parser().parse_args(["--checkpoint", str(run), "--device", "cpu", "--precision", "bf16"]))
    with pytest.raises(CheckpointError, match=r"served without torch\.compile"):
        build_backend(parser().parse_args(["--checkpoint", str(run), "--device", "cpu", "--compile", "default"]))
    with pytest.raises(CheckpointError, match=r"cuda_graph: diffusion is served without CUDA graphs \(each chunk"):
        build_backend(parser().parse_args(["--checkpoint", str(run), "--device", "cpu", "--cuda-graph"]))
    backend = build_backend(parser().parse_args(["--checkpoint", str(run), "--device", "cpu"]))  # so101 serve's
    assert isinstance(backend, DiffusionBackend)
    spec = checkpoint_spec(run, "cpu")  # what the graph evaluation serves and renders
    assert (spec.cameras, spec.width, spec.height) == (("top",), 64, 48)
    server = PolicyServer(backend, ServerConfig(port=0))
    assert server.warm_up(warmup_observation(backend), 1).runs == 1
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    obs = _obs(1, seed=2)
    try:
        with PolicyClient(port=server.port, timeout_ms=30000) as client:
            assert client.ping()
            torch.manual_seed(3)  # the server thread draws the chunk's noise from the process's generator
            action, info = client.get_action(obs)
            assert client.reset() == {}
    finally:
        server.stop()
        thread.join(5.0)
    torch.manual_seed(3)
    direct, _ = backend.get_action(obs, None)
    assert action["single_arm"].shape == (1, CHUNK, 5) and action["gripper"].shape == (1, CHUNK, 1) and info == {}
    np.testing.assert_array_equal(action["single_arm"], direct["single_arm"])
    np.testing.assert_array_equal(action["gripper"], direct["gripper"])


def test_the_policy_benchmark_times_an_untrained_diffusion_policy(tmp_path: Path) -> None:
    checkpoint = synthetic_checkpoint(tmp_path, 64, 48, cameras=("top",), train=dataclasses.replace(TINY, steps=1))
    out = inference_latency(checkpoint, "cpu", calls=2, warmup=1, width=64, height=48)
    assert out["chunk"] == CHUNK and out["inference_ms"]["p99"] > 0 and out["cameras"] == ["top"]
    assert json.loads((checkpoint / "config.json").read_text())["type"] == "diffusion"
