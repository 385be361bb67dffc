"""``so101 bench render`` / ``so101 bench export``: phase specs, the capped merge, the record after each phase."""

from __future__ import annotations

from typing import Any

import pytest


def test_export_phase_spec_carries_preset_and_image_stats() -> None:
    from so101_dataset.bench_render import parse_phases
    from so101_dataset.config import DatasetConfig

    base = DatasetConfig(width=160, height=120)
    a, b, c = parse_phases("export:2:1:ultrafast:lerobot:s=3,export:1,dataset:1:4:exact", base, encoder_threads=1)
    assert a["name"] == "export_p2_b1_h264_ultrafast_lerobot" and a["processes"] == 2 and a["seconds"] == 3.0
    assert a["cfg"].video.image_stats == "lerobot" and a["cfg"].video.preset == "ultrafast"
    assert a["cfg"].video.encoder_threads == 1 and a["cfg"].video.crf == base.video.crf
    assert b["name"] == "export_p1_b1_h264_veryfast_exact" and b["cfg"].video.image_stats == "exact"
    assert c["mode"] == "dataset" and c["frames_per_pass"] == 4 and c["cfg"].video.image_stats == "exact"
    with pytest.raises(ValueError, match="mode must be"):
        parse_phases("encode:1", base, encoder_threads=1)
    one, auto = parse_phases("dataset:16:32:veryfast:t=1,dataset:16:32:veryfast:t=0", base, encoder_threads=1)
    assert one["cfg"].video.encoder_threads == 1 and one["name"] == "dataset_p16_b32_h264_veryfast_exact"
    assert auto["cfg"].video.encoder_threads == 0 and auto["name"] == "dataset_p16_b32_h264_veryfast_exact_t0"
    for bad in ("t=-1", "t=two", "t="):
        with pytest.raises(ValueError, match="encoder threads must be a whole number"):
            parse_phases(f"dataset:1:1:{bad}", base, encoder_threads=1)
    with pytest.raises(ValueError, match="repeats"):  # the second would overwrite the first's record
        parse_phases("export:2:1:t=1,export:2:1", base, encoder_threads=1)


@pytest.fixture(scope="module")
def capped_run() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A tiled phase, then a dataset phase (its own encoder threads) that writes more one-episode shards than the
    merge takes (2)."""
    from so101_dataset.bench_render import run_render_benchmark

    seen: list[dict[str, Any]] = []
    record = run_render_benchmark(
        width=160, height=120, phases_spec="tiled:1:1:s=0.5,dataset:1:1:ultrafast:s=2:t=1", frames=4,
        encoder_threads=2, merge_episodes=2, on_record=seen.append,
    )  # fmt: skip
    return record, seen


def test_dataset_phase_merges_at_most_merge_episodes(capped_run: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    record, _ = capped_run
    entry = record["phases"]["dataset_p1_b1_h264_ultrafast_exact_t1"]
    assert entry["episodes"] > 2 and entry["aggregate_episodes"] == 2 and entry["aggregate_workers"] == 1
    assert entry["encoder"]["threads"] == 1  # the phase's own (t=1), not the run's default (2)
    per_episode, episodes = entry["aggregate_s_per_episode"], entry["episodes"]
    assert entry["aggregate_s"] > 0 and per_episode == pytest.approx(entry["aggregate_s"] / 2, abs=1e-3)
    assert entry["aggregate_s_all_episodes"] == pytest.approx(per_episode * episodes, 1e-2)
    assert f"merge of 2 of {episodes} episodes, extrapolated" in entry["three_cam_fps_incl_aggregate_basis"]
    merge_s = entry["aggregate_import_s"] + entry["aggregate_s_all_episodes"]  # the import once, the merge per episode
    expected = entry["three_cam_frames"] / (entry["wall_s"] + merge_s)
    assert entry["three_cam_fps_incl_aggregate"] == pytest.approx(expected, abs=0.2)
    assert record["merge_episodes"] == 2 and record["complete"] is True


def test_record_is_handed_out_after_each_phase_and_before_the_merge(
    capped_run: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    record, seen = capped_run
    assert [sorted(s["phases"]) for s in seen] == [
        ["tiled_p1_b1"],
        ["dataset_p1_b1_h264_ultrafast_exact_t1", "tiled_p1_b1"],
        ["dataset_p1_b1_h264_ultrafast_exact_t1", "tiled_p1_b1"],
    ]
    assert all(s["complete"] is False for s in seen)
    assert seen[0]["tiled_render_fps"] == record["tiled_render_fps"] and seen[0]["best_phase"] is None
    before, after = (s["phases"]["dataset_p1_b1_h264_ultrafast_exact_t1"] for s in seen[1:])
    assert before["aggregate_s"] is None and before["three_cam_fps"] > 0 and seen[1]["best_phase"] is not None
    assert after == record["phases"]["dataset_p1_b1_h264_ultrafast_exact_t1"]
