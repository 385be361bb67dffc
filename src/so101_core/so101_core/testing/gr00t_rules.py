"""GR00T N1.6's modality-config types and registry, written from Isaac-GR00T's published code (read, not copied:
``gr00t/data/types.py``, ``gr00t/configs/data/embodiment_configs.py``) for tests here, where Isaac-GR00T itself
cannot be installed (Python 3.10 + CUDA). :func:`run_modality_config_file` runs a ``--modality_config_path`` file
under stand-in ``gr00t`` modules built from these types and returns what it registered.
"""

from __future__ import annotations

import runpy
import sys
import types
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any
from unittest import mock


class ActionRepresentation(Enum):
    RELATIVE = "relative"
    DELTA = "delta"
    ABSOLUTE = "absolute"


class ActionType(Enum):
    EEF = "eef"
    NON_EEF = "non_eef"


class ActionFormat(Enum):
    DEFAULT = "default"
    XYZ_ROT6D = "xyz+rot6d"
    XYZ_ROTVEC = "xyz+rotvec"


class EmbodimentTag(Enum):
    NEW_EMBODIMENT = "new_embodiment"


@dataclass
class ActionConfig:
    rep: ActionRepresentation
    type: ActionType
    format: ActionFormat
    state_key: str | None = None


@dataclass
class ModalityConfig:
    """N1.6's dataclass: its constructor is what ``MsgSerializer`` calls as ``ModalityConfig(**obj["as_json"])``."""

    delta_indices: list[int]
    modality_keys: list[str]
    sin_cos_embedding_keys: list[str] | None = None
    mean_std_embedding_keys: list[str] | None = None
    action_configs: list[Any] | None = None

    def __post_init__(self) -> None:  # N1.6's checks, in its order
        if not isinstance(self.delta_indices, list):
            raise ValueError(f"delta_indices must be a non-None list, got {self.delta_indices!r}")
        if not isinstance(self.modality_keys, list) or not self.modality_keys:
            raise ValueError(f"modality_keys must be a non-empty list, got {self.modality_keys!r}")
        if self.action_configs is not None:
            assert len(self.action_configs) == len(self.modality_keys)
            self.action_configs = [
                ActionConfig(
                    ActionRepresentation[c["rep"]], ActionType[c["type"]], ActionFormat[c["format"]], c.get("state_key")
                )
                if isinstance(c, dict)
                else c
                for c in self.action_configs
            ]


def run_modality_config_file(path: Path) -> dict[str, dict[str, ModalityConfig]]:
    """``{embodiment tag value: {modality: ModalityConfig}}`` that the file at ``path`` registers."""
    registered: dict[str, dict[str, ModalityConfig]] = {}

    def register_modality_config(config: dict, embodiment_tag: EmbodimentTag = EmbodimentTag.NEW_EMBODIMENT) -> None:
        assert embodiment_tag.value not in registered, f"Embodiment tag {embodiment_tag} already registered"
        registered[embodiment_tag.value] = config

    def module(name: str, **attrs: Any) -> types.ModuleType:
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        return m

    kinds = {"ActionConfig": ActionConfig, "ModalityConfig": ModalityConfig}
    enums = {"ActionRepresentation": ActionRepresentation, "ActionType": ActionType, "ActionFormat": ActionFormat}
    stand_ins = {name: module(name) for name in ("gr00t", "gr00t.configs", "gr00t.configs.data", "gr00t.data")} | {
        "gr00t.configs.data.embodiment_configs": module(
            "gr00t.configs.data.embodiment_configs", register_modality_config=register_modality_config
        ),
        "gr00t.data.embodiment_tags": module("gr00t.data.embodiment_tags", EmbodimentTag=EmbodimentTag),
        "gr00t.data.types": module("gr00t.data.types", **kinds, **enums),
    }
    with mock.patch.dict(sys.modules, stand_ins):
        runpy.run_path(str(path))
    return registered
