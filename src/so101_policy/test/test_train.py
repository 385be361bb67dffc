"""ACT training through LeRobot on a tiny dataset, on CPU: the loss falls, checkpoints load, SIGKILL resumes."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from nodegraph.testing import wait_until
from so101_policy.checkpoints import last_checkpoint
from so101_policy.config import TrainConfig
from so101_policy.errors import ConfigError
from so101_policy.lerobot_policy import ActPolicy
from so101_policy.protocol import observation
from so101_policy.testing.dataset import make_dataset
from so101_policy.train import TrainProgress, _same_model, batch_stream, open_dataset, train_policy
from so101_policy.training_data import open_training_data

TINY = {
    "batch_size": 4,
    "num_workers": 0,
    "lr": 1e-3,
    "lr_backbone": 1e-3,
    "chunk_size": 8,
    "dim_model": 32,
    "dim_feedforward": 64,
    "n_heads": 2,
    "n_encoder_layers": 1,
    "latent_dim": 8,
    "log_freq": 2,
    "device": "cpu",
    "system_metrics": False,
    "cameras": ("top",),
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("ds") / "ds")


def test_twenty_steps_reduce_the_loss_and_the_checkpoint_serves(dataset: Path, tmp_path: Path) -> None:
    reports: list[TrainProgress] = []
    result = train_policy(
        dataset, tmp_path / "run", TrainConfig(steps=20, save_freq=20, **TINY), progress=reports.append
    )
    assert result.steps == 20 and result.resumed_from == 0 and result.samples_per_s > 0
    losses = [r.loss for r in reports]
    assert len(losses) == 10
    assert np.mean(losses[-3:]) < 0.7 * np.mean(losses[:3]), losses
    assert result.checkpoint_dir == last_checkpoint(tmp_path / "run")
    pretrained = result.checkpoint_dir / "pretrained_model"
    for name in ("config.json", "model.safetensors", "so101_train_config.json"):
        assert (pretrained / name).is_file()
    assert (result.checkpoint_dir / "training_state" / "training_step.json").is_file()
    assert (tmp_path / "run" / "mlflow.db").is_file()

    import mlflow

    run = mlflow.get_run(result.mlflow_run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["train.chunk_size"] == "8"
    for key in ("loss", "grad_norm", "lr", "samples_per_s", "system/rss_mb"):
        assert key in run.data.metrics, key
    artifacts = [a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id, "checkpoints/000020")]
    assert "checkpoints/000020/model.safetensors" in artifacts

    policy = ActPolicy(tmp_path / "run", device="cpu")
    assert policy.cameras == ("top",) and policy.horizon == 8
    obs = observation({"top": np.zeros((96, 128, 3), np.uint8)}, np.zeros(6), "put the vial in the rack")
    action, _ = policy.get_action(obs, None)
    assert action["single_arm"].shape == (1, 8, 5) and action["gripper"].shape == (1, 8, 1)
    assert np.all(np.isfinite(action["single_arm"]))


def test_bad_dataset_and_changed_resume_config_are_clear_errors(dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="neither a LeRobot dataset"):
        train_policy(tmp_path, tmp_path / "run", TrainConfig(steps=1, **TINY))
    with pytest.raises(ConfigError, match="cameras: must be distinct names"):
        TrainConfig(steps=1, **{**TINY, "cameras": ("ego", "nope")})
    with pytest.raises(ConfigError, match="multiple of n_heads"):
        TrainConfig(steps=1, **{**TINY, "dim_model": 33})


SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from so101_policy.config import TrainConfig
    from so101_policy.train import train_policy
    cfg = TrainConfig(steps=int(sys.argv[3]), save_freq=4, **{tiny!r})
    r = train_policy(Path(sys.argv[1]), Path(sys.argv[2]), cfg, progress=lambda p: print("step", p.step, flush=True))
    print("RESULT", r.steps, r.resumed_from, flush=True)
    """
)


@pytest.mark.slow
def test_sigkill_then_resume_from_the_last_checkpoint(dataset: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(tiny=TINY))
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(dataset), str(out), "400"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:

        def checkpoint_8() -> bool:
            ckpt = last_checkpoint(out) if (out / "checkpoints").is_dir() else None
            return ckpt is not None and int(ckpt.name) >= 8

        wait_until(checkpoint_8, 120.0, "a checkpoint at step >= 8", 0.2)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    killed_at = int(last_checkpoint(out).name)  # type: ignore[union-attr]
    assert 8 <= killed_at < 400
    target = killed_at + 4
    done = subprocess.run(
        [sys.executable, str(script), str(dataset), str(out), str(target)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"RESULT {target} {killed_at}" in done.stdout
    steps = [int(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("step")]
    assert steps and steps[0] > killed_at  # continued, not restarted
    assert int(last_checkpoint(out).name) == target  # type: ignore[union-attr]
    changed = {**TINY, "dim_model": 64}
    with pytest.raises(ConfigError, match=r"config changed.*dim_model"):
        train_policy(dataset, out, TrainConfig(steps=target + 4, **changed))


def test_decoded_frames_match_lerobots_own_items(dataset: Path) -> None:
    """The in-memory source returns what LeRobotDataset returns for the same rows: state, the padded action
    chunk and its pad mask exactly, images to within one 8-bit level (the same decoder, another code path)."""
    import torch
    from lerobot.datasets import LeRobotDataset
    from so101_policy.frame_cache import DecodedDataset

    chunk = 8
    ds = LeRobotDataset("local/so101", root=dataset, delta_timestamps={"action": [i / 30 for i in range(chunk)]},
                        video_backend="pyav")  # fmt: skip
    keys = ["observation.images.top", "observation.images.ego"]
    decoded = DecodedDataset.decode(ds, keys, chunk, "cpu")
    assert len(decoded) == len(ds) == 60
    index = [0, 17, 25, 29, 30, 59]  # episode starts, the last frames (padded chunks), the second episode
    got = decoded.batch(torch.tensor(index))
    for row, i in enumerate(index):
        want = ds[i]
        assert torch.equal(got["observation.state"][row], want["observation.state"])
        assert torch.equal(got["action"][row], want["action"]), i
        assert torch.equal(got["action_is_pad"][row], want["action_is_pad"]), i
        for key in keys:
            assert got[key][row].shape == want[key].shape
            assert float((got[key][row] - want[key]).abs().max()) <= 1.5 / 255, (i, key)
    assert bool(got["action_is_pad"][3].any()) and not bool(got["action_is_pad"][0].any())


def test_both_data_sources_train(dataset: Path, tmp_path: Path) -> None:
    """frame_cache_gb 0 streams through LeRobot's DataLoader; the default decodes into memory; both train."""
    import json

    for name, gb in (("stream", 0.0), ("memory", 8.0)):
        result = train_policy(dataset, tmp_path / name, TrainConfig(steps=4, save_freq=4, frame_cache_gb=gb, **TINY))
        assert result.steps == 4 and np.isfinite(result.final_loss)
    import mlflow

    sources = {}
    for name in ("stream", "memory"):
        mlflow.set_tracking_uri(f"sqlite:///{tmp_path / name / 'mlflow.db'}")
        run_id = (tmp_path / name / "mlflow_run_id").read_text().strip()
        sources[name] = mlflow.get_run(run_id).data.params["data_source"]
    assert sources == {"stream": "dataloader", "memory": "memory"}, json.dumps(sources)


def test_max_episodes_trains_on_the_first_episodes_rows_only(dataset: Path, tmp_path: Path) -> None:
    """max_episodes 1 of 2: both sources yield episode 0's 30 rows and no other; the run records 1 episode of 30
    frames and does not resume with another max_episodes."""
    import torch

    full = open_dataset(dataset, 8).hf_dataset.with_format("numpy")
    episode = np.asarray(full["episode_index"])
    first = np.asarray(full["observation.state"])[episode == 0]  # (30, 6), distinct rows
    data = open_training_data(dataset, max_episodes=1)
    assert (data.episodes, data.frames, data.lerobot_episodes) == (1, 30, (0,))
    assert len(open_dataset(dataset, 8, data.lerobot_episodes)) == 30
    for gb, name in ((0.0, "dataloader"), (8.0, "memory")):
        cfg = TrainConfig(steps=1, frame_cache_gb=gb, max_episodes=1, **TINY)
        source, stream = batch_stream(data, ["observation.images.top"], cfg, 0, "cpu")
        assert source == name
        batches = [next(stream) for _ in range(16)]  # 64 items: two epochs of 30 rows and more
        states = torch.cat([b["observation.state"] for b in batches]).numpy()
        rows = [int(np.flatnonzero((first == s).all(1))[0]) for s in states if (first == s).all(1).any()]
        assert len(rows) == len(states), f"{name}: rows of another episode"
        assert set(rows) == set(range(30)), name
        if name == "dataloader":
            assert torch.cat([b["episode_index"] for b in batches]).eq(0).all()
    result = train_policy(dataset, tmp_path / "run", TrainConfig(steps=1, save_freq=1, max_episodes=1, **TINY))
    assert (result.dataset_episodes, result.dataset_frames) == (1, 30)
    import mlflow

    params = mlflow.get_run(result.mlflow_run_id).data.params
    assert (params["dataset.episodes"], params["dataset.frames"], params["train.max_episodes"]) == ("1", "30", "1")
    with pytest.raises(ConfigError, match=r"config changed \(max_episodes\)"):
        train_policy(dataset, tmp_path / "run", TrainConfig(steps=2, save_freq=1, max_episodes=2, **TINY))
    old_run = {k: v for k, v in dataclasses.asdict(TrainConfig(**TINY)).items() if k != "max_episodes"}
    with pytest.raises(ConfigError, match=r"config changed \(max_episodes\)"):  # saved before the field existed
        _same_model(old_run, TrainConfig(max_episodes=1, **TINY))
    with pytest.raises(ConfigError, match=r"train.max_episodes: is 3 but .* has 2 episodes"):
        open_training_data(dataset, max_episodes=3)


def test_a_time_limit_stops_with_a_checkpoint_of_the_last_step_and_resumes_on_schedule(
    dataset: Path, tmp_path: Path
) -> None:
    import json

    cfg = TrainConfig(steps=10_000, save_freq=10_000, lr_schedule="cosine", warmup_steps=3, time_limit_s=6.0, **TINY)
    first = train_policy(dataset, tmp_path / "run", cfg)
    assert 0 < first.steps < 10_000  # stopped by the limit, not by the step count
    assert (
        first.checkpoint_dir == last_checkpoint(tmp_path / "run") and first.checkpoint_dir.name == f"{first.steps:06d}"
    )
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert lines[-1] == {"step": first.steps, "stopped_by_time_limit": 1.0}
    # the schedule is by step: warm-up, then cosine towards 0 at step 10,000 (the resumed run continues it)
    lrs = [x["lr"] for x in lines if "lr" in x]
    assert lrs[0] < TINY["lr"] and max(lrs) <= TINY["lr"]
    again = train_policy(dataset, tmp_path / "run", dataclasses.replace(cfg, steps=first.steps + 4, time_limit_s=0.0))
    assert again.resumed_from == first.steps and again.steps == first.steps + 4
