"""Fixtures: one small build shared by the read-only tests (demo files from :mod:`dataset_fixtures`)."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from dataset_fixtures import write_demos

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("MUJOCO_GL", "egl")


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """One small build shared by the read-only tests: 3 good demos + 1 corrupt file (skipped)."""
    from so101_dataset.build import build_dataset
    from so101_dataset.config import load_dataset_config

    root = tmp_path_factory.mktemp("build")
    demos = root / "demos"
    write_demos(demos, 3)
    (demos / "demo_000003.npz").write_bytes(b"not a zip file")
    base = load_dataset_config()
    # four frames per render pass: the product's batched readback (the tests re-render one frame per pass)
    cfg = base.with_overrides(width=64, height=48, render=replace(base.render, frames_per_pass=4))
    result = build_dataset(demos, root / "out", cfg)
    return result, cfg, demos
