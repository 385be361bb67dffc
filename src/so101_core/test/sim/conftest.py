"""Shared fixtures for the MuJoCo twin tests (CPU only, no rendering unless a test asks)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from so101_core.sim.config import (
    SimConfig,
    TaskConfig,
    default_config_dir,
    load_sim_config,
    load_task_config,
)
from so101_core.sim.randomization import DRConfig, load_dr_config
from so101_core.sim.twin import Twin


@pytest.fixture(scope="session")
def config_dir() -> Path:
    return default_config_dir()


@pytest.fixture(scope="session")
def sim_cfg() -> SimConfig:
    return load_sim_config()


@pytest.fixture(scope="session")
def task_cfg() -> TaskConfig:
    return load_task_config()


@pytest.fixture(scope="session")
def dr_cfg() -> DRConfig:
    return load_dr_config()


@pytest.fixture(scope="session")
def raw_yaml(config_dir: Path) -> Any:
    def read(name: str) -> dict[str, Any]:
        return yaml.safe_load((config_dir / f"{name}.yaml").read_text())

    return read


@pytest.fixture(scope="module")
def twin(sim_cfg: SimConfig, dr_cfg: DRConfig) -> Iterator[Twin]:
    t = Twin(sim_cfg, dr_cfg)
    yield t
    t.close()


@pytest.fixture(scope="module")
def nominal_twin(sim_cfg: SimConfig) -> Iterator[Twin]:
    t = Twin(sim_cfg, DRConfig.disabled())
    yield t
    t.close()


@pytest.fixture(scope="module")
def in_hand_twin(sim_cfg: SimConfig, dr_cfg: DRConfig) -> Iterator[Twin]:
    """Every reset starts with the vial grasped and lifted (partly-done start forced)."""
    t = Twin(sim_cfg, dataclasses.replace(dr_cfg, partly_done_prob=1.0))
    yield t
    t.close()
