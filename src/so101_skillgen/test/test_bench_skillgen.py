"""``so101 bench skillgen``'s seed sets: each case on several expert seed sets, pooled."""

from __future__ import annotations

import pytest
from so101_skillgen.bench_skillgen import SEED_SET_STRIDE, SEED_START, run_skillgen_benchmark
from so101_skillgen.errors import SkillGenError


def test_two_seed_sets_run_on_their_own_seeds_and_pool_into_one_case() -> None:
    out = run_skillgen_benchmark(
        num_seeds=2, num_demos=2, profiles=(None,), noise_mrad=(0.0,), variants=("single_vial",),
        bound_scenes=0, seed_sets=2,
    )  # fmt: skip
    case = out["cases"]["single_default_noise0"]
    sets = case["seed_sets"]
    assert [s["seed_start"] for s in sets] == [SEED_START, SEED_START + SEED_SET_STRIDE]
    assert all(s["kept"] == 2 and s["expert"]["episodes"] >= 2 for s in sets)
    assert case["kept"] == 4 and case["attempted"] == sum(s["attempted"] for s in sets)
    assert case["yield"] == pytest.approx(4 / case["attempted"], abs=1e-4)
    assert out["yield_single_default"] == case["yield"]
    assert case["kept_per_min_per_core"] is not None and case["kept_per_min_per_core"] > 0


def test_no_seed_set_is_a_clear_error() -> None:
    with pytest.raises(SkillGenError, match="seed_sets"):
        run_skillgen_benchmark(seed_sets=0)
