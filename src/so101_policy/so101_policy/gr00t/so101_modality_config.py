"""GR00T N1.6 modality config for the so101 datasets (pass as ``--modality_config_path``; runs inside
Isaac-GR00T only). Keys match ``meta/modality.json`` of ``so101 dataset build``'s v2.1 export: video ego/side/top,
state and action ``single_arm`` (5) + ``gripper`` (1), language ``annotation.human.task_description``; action
chunk of 16 steps (30 Hz), arm relative to the state, gripper absolute."""

# mypy: ignore-errors
from gr00t.configs.data.embodiment_configs import register_modality_config
from gr00t.data.embodiment_tags import EmbodimentTag
from gr00t.data.types import (
    ActionConfig,
    ActionFormat,
    ActionRepresentation,
    ActionType,
    ModalityConfig,
)

HORIZON = 16

SO101_CONFIG = {
    "video": ModalityConfig(delta_indices=[0], modality_keys=["ego", "side", "top"]),
    "state": ModalityConfig(delta_indices=[0], modality_keys=["single_arm", "gripper"]),
    "action": ModalityConfig(
        delta_indices=list(range(HORIZON)),
        modality_keys=["single_arm", "gripper"],
        action_configs=[
            ActionConfig(rep=ActionRepresentation.RELATIVE, type=ActionType.NON_EEF, format=ActionFormat.DEFAULT),
            ActionConfig(rep=ActionRepresentation.ABSOLUTE, type=ActionType.NON_EEF, format=ActionFormat.DEFAULT),
        ],
    ),
    "language": ModalityConfig(delta_indices=[0], modality_keys=["annotation.human.task_description"]),
}

register_modality_config(SO101_CONFIG, embodiment_tag=EmbodimentTag.NEW_EMBODIMENT)
