"""so101's LeRobot feature keys are LeRobot's own (``lerobot.utils.constants``), and image keys invert."""

from __future__ import annotations

import pytest
from lerobot.utils import constants
from so101_core.lerobot_schema import ACTION, OBS_IMAGES, OBS_STATE, camera_of, image_key, is_image_key


def test_keys_are_lerobots() -> None:
    assert (OBS_STATE, ACTION, OBS_IMAGES) == (constants.OBS_STATE, constants.ACTION, constants.OBS_IMAGES)


def test_image_keys_name_their_camera_and_nothing_else_is_one() -> None:
    assert image_key("side") == "observation.images.side" and camera_of(image_key("side")) == "side"
    assert is_image_key("observation.images.ego") and not is_image_key(OBS_STATE)
    assert not is_image_key("observation.images.") and not is_image_key("observation.image.top")
    with pytest.raises(ValueError, match="not a LeRobot image feature key"):
        camera_of(ACTION)
