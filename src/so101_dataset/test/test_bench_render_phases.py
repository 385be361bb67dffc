"""The render benchmark's phase list (what the H200 command asks for), parsed without rendering."""

from __future__ import annotations

import pytest


def test_phases_carry_the_readback_and_get_distinct_names() -> None:
    from so101_dataset.bench_render import DEFAULT_PHASES, parse_phases
    from so101_dataset.config import load_dataset_config

    base = load_dataset_config()
    spec = "stock:16,tiled:1:8:sync,tiled:1:8:pbo,tiled:1:8:pbo_bgra,tiled:16:8,dataset:16:8:ultrafast:pbo_bgra:s=12"
    ph = parse_phases(spec, base, encoder_threads=1)
    names = [p["name"] for p in ph]
    assert len(set(names)) == len(names)
    assert [p.get("readback") for p in ph] == [None, "sync", "pbo", "pbo_bgra", base.render.readback, "pbo_bgra"]
    last = ph[-1]
    assert last["seconds"] == 12.0 and last["frames_per_pass"] == 8 and last["processes"] == 16
    assert last["cfg"].video.preset == "ultrafast" and last["cfg"].video.encoder_threads == 1
    assert len(parse_phases(DEFAULT_PHASES, base, 1)) == 5
    with pytest.raises(ValueError, match="mode must be"):
        parse_phases("tiles:1:8", base, 1)
