from __future__ import annotations

from so101_hardware.feetech.bench import run_bus_benchmark


def test_benchmark_reports_rate_and_jitter() -> None:
    result = run_bus_benchmark(seconds=0.3, rate_hz=50.0)
    assert result["cycles"] >= 2 and result["errors"] == 0
    assert set(result["jitter_ms"]) == {"p50", "p99", "max"}
    assert result["achieved_hz"] > 0
