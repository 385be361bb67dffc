"""Why an episode failed, judged on a real trajectory: the scripted expert's successful episode in the twin, cut
before the grasp, while carrying, and at its end (placed, released, but judged a failure); the jaw contacts are
recomputed in a twin from the recorded poses as the evaluator does. And which episodes keep a video."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from so101_policy.evaluate import video_kept, video_wanted

from so101_policy import outcome


@pytest.fixture(scope="module")
def episode() -> tuple[dict[str, npt.NDArray[Any]], Any, Any]:
    """The expert's episode on the nominal scene as the evaluator's arrays, and the task and rack configs."""
    from so101_core.sim.config import load_sim_config, load_task_config
    from so101_core.sim.randomization import DRConfig
    from so101_core.sim.rollout import run_scripted_episode
    from so101_core.sim.twin import Twin

    with Twin(load_sim_config(), DRConfig.disabled()) as twin:
        rec = run_scripted_episode(twin, 7, record=True)
        assert rec.success
        jaws = []
        for q, vial, rack in zip(rec.joint_positions, rec.vial_poses, rec.rack_poses, strict=True):
            twin.set_object_pose("rack", (rack[:3], rack[3:]))
            twin.set_object_pose("vial", (vial[:3], vial[3:]))
            twin.set_joint_positions(q)
            jaws.append(twin.jaw_contacts().both)
        rack_config = twin.config.rack
    arrays = {"vial": rec.vial_poses, "rack": rec.rack_poses, "both_jaws": np.array(jaws)}
    return arrays, load_task_config(), rack_config


def _upto(arrays: dict[str, npt.NDArray[Any]], end: int) -> dict[str, npt.NDArray[Any]]:
    return {k: v[:end] for k, v in arrays.items()}


def test_failure_reasons_along_a_real_episode(episode: tuple[dict[str, npt.NDArray[Any]], Any, Any]) -> None:
    arrays, task, rack = episode
    held = np.flatnonzero(arrays["both_jaws"])
    assert len(held) > 10, "the expert grasps the vial"
    why = lambda a: outcome.failure_reason(a, False, task, rack)  # noqa: E731
    assert outcome.failure_reason(arrays, True, task, rack) is None
    assert why(_upto(arrays, held[0])) == outcome.NEVER_GRASPED
    assert why(_upto(arrays, held[0] + 5)) == outcome.CARRYING
    assert why(arrays) == outcome.PLACED_SHORT  # placed and released: a failure only if the detector did not fire
    slipped = {k: v.copy() for k, v in _upto(arrays, held[0] + 5).items()}
    slipped["both_jaws"][-1] = False  # let go before the vial left the mat
    assert why(slipped) == outcome.NEVER_LIFTED
    up = np.flatnonzero(arrays["vial"][:, 2] - arrays["vial"][0, 2] >= outcome.LIFT_M)
    assert len(up) and up[0] > held[0] + 5, "the expert lifts the vial after closing the jaws"
    released = {k: v.copy() for k, v in _upto(arrays, up[0] + 1).items()}
    released["both_jaws"][-1] = False  # let go mid-carry
    assert why(released) == outcome.RELEASED_ELSEWHERE
    just_short = {k: v.copy() for k, v in _upto(arrays, up[0]).items()}
    just_short["both_jaws"][-1] = False  # one step earlier: not yet lifted
    assert why(just_short) == outcome.NEVER_LIFTED
    in_hand = {k: v[held[0] + 1 : held[0] + 5].copy() for k, v in arrays.items()}
    in_hand["both_jaws"][-1] = False  # a partly-done start, the vial in the hand from the first step: lifted already
    assert why(in_hand) == outcome.RELEASED_ELSEWHERE
    still_held = {k: v.copy() for k, v in arrays.items()}
    still_held["both_jaws"][-1] = True
    assert why(still_held) == outcome.PLACED_HELD
    assert why(_upto(arrays, 0)) == outcome.NO_STEPS


def test_final_placement_tells_a_near_miss_from_a_wrong_slot(
    episode: tuple[dict[str, npt.NDArray[Any]], Any, Any],
) -> None:
    arrays, task, rack = episode
    target = task.fill_order[0]  # the nominal scene's first free slot, where the expert placed the vial
    end = outcome.final_placement(arrays, target, rack)
    assert end is not None and end["nearest_slot"] == target
    assert end["target_offset_mm"] < 1000.0 * task.slot_tolerance and end["tilt_deg"] < 10.0 and end["height_mm"] > 0
    other = task.fill_order[1]  # judged against another slot: off by at least one slot pitch, same nearest slot
    wrong = outcome.final_placement(arrays, other, rack)
    assert wrong is not None and wrong["nearest_slot"] == target
    assert wrong["target_offset_mm"] > 1000.0 * rack.slot_pitch * 0.99
    held = np.flatnonzero(arrays["both_jaws"])
    carried = outcome.final_placement(_upto(arrays, held[0] + 30), target, rack)
    assert carried is not None and carried["height_mm"] > end["height_mm"]  # lifted off the mat
    assert outcome.final_placement(arrays, -1, rack)["target_offset_mm"] is None  # type: ignore[index]
    assert outcome.final_placement(_upto(arrays, 0), target, rack) is None


def test_the_release_is_where_the_jaws_last_let_go_of_the_lifted_vial(
    episode: tuple[dict[str, npt.NDArray[Any]], Any, Any],
) -> None:
    arrays, task, rack = episode
    target = task.fill_order[0]
    held = np.flatnonzero(arrays["both_jaws"])
    seated = outcome.release_placement(arrays, target, rack)  # the expert opens the jaws on the seated vial
    assert seated == outcome.placement(arrays["vial"][held[-1] + 1], arrays["rack"][held[-1] + 1], target, rack)
    assert seated is not None and seated["target_offset_mm"] < 1000.0 * task.slot_tolerance
    assert outcome.release_placement(_upto(arrays, held[-1]), target, rack) is None  # still held: no release yet
    up = np.flatnonzero(arrays["vial"][:, 2] - arrays["vial"][0, 2] >= outcome.LIFT_M)
    early = {k: v.copy() for k, v in arrays.items()}
    early["both_jaws"][up[0] + 10] = False  # a first let-go mid-carry, high above the mat; held again after it
    first = outcome.release_placement(_upto(early, up[0] + 11), target, rack)
    assert first is not None and first["height_mm"] > seated["height_mm"] + 10.0
    assert outcome.release_placement(early, target, rack) == seated  # the last let-go is the one reported
    slipped = {k: v.copy() for k, v in _upto(arrays, held[0] + 5).items()}
    slipped["both_jaws"][-1] = False  # let go before the vial left the mat: not a release of a lifted vial
    assert outcome.release_placement(slipped, target, rack) is None
    assert outcome.release_placement(_upto(arrays, 0), target, rack) is None


def test_the_first_success_and_failure_after_the_first_episodes_keep_a_video() -> None:
    rows: list[dict[str, Any]] = []
    kept = []
    for index, success in enumerate([False, False, False, True, True, False]):
        if video_wanted(index, rows, 2) and video_kept(index, success, rows, 2):
            kept.append(index)
            rows.append({"success": success, "video": f"episode_{index:03d}.mp4"})
        else:
            rows.append({"success": success})
        if index == 4:
            assert not video_wanted(5, rows, 2)  # both outcomes have one: no more frames recorded
    assert kept == [0, 1, 3]
    assert not video_wanted(0, [], 0)
