"""``so101 bench render`` / ``so101 bench export`` phase specs."""

from __future__ import annotations

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
