"""``so101 bench train`` on the tiny dataset: both sources measured, each named by what actually fed it."""

from __future__ import annotations

from pathlib import Path

import pytest
from so101_policy.bench_train import run_train_benchmark
from so101_policy.config import TrainConfig
from so101_policy.testing.dataset import make_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("ds") / "ds")


def test_both_sources_are_measured_and_named(dataset: Path) -> None:
    cfg = TrainConfig(batch_size=4, num_workers=0, chunk_size=8, dim_model=32, dim_feedforward=64, n_heads=2,
                      n_encoder_layers=1, latent_dim=8, system_metrics=False, cameras=("top",))  # fmt: skip
    out = run_train_benchmark(dataset, steps=2, device="cpu", config=cfg, batches=5)
    assert {k: v["data_source"] for k, v in out["sources"].items()} == {"dataloader": "dataloader", "memory": "memory"}
    for row in out["sources"].values():
        assert row["data_samples_per_s"] > 0 and row["cold_start_s"] > 0 and row["samples_per_s"] > 0
    assert out["train_samples_per_s"] == max(r["samples_per_s"] for r in out["sources"].values())
