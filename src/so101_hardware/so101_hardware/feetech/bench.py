"""Control-loop benchmarks of the Feetech bus over the emulator: sync read + sync write of 6 servos at a fixed
rate, and the highest sustained rate at the baud rate's wire time (with the physical limit it implies)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from . import protocol as p
from .bus import BusConfig, FeetechBus
from .emulator import FeetechEmulator

_IDS = (1, 2, 3, 4, 5, 6)


def run_bus_benchmark(seconds: float = 5.0, rate_hz: float = 100.0) -> dict[str, Any]:
    """Run a fixed-rate loop (telemetry sync read of 6 servos + Goal_Position sync write) for ``seconds``.

    The emulator runs in a thread of this process on a pty, so the figure includes the SDK, pyserial,
    the pty and the emulator's Python parsing, but no wire time (a real 1 Mbit/s bus adds ~0.3 ms per cycle).

    Returns:
        dict with ``cycles``, ``target_hz``, ``achieved_hz``, ``overruns`` (cycles longer than the period),
        ``errors`` (bus exceptions), ``period_ms`` (p50/p99/max of the start-to-start period),
        ``jitter_ms`` (p50/p99/max of |period - 1/rate|) and ``io_ms`` (p50/p99/max of read+write time).
    """
    if seconds <= 0 or rate_hz <= 0:
        raise ValueError("seconds and rate_hz must be positive")
    period = 1.0 / rate_hz
    starts: list[float] = []
    io: list[float] = []
    overruns = errors = 0
    with FeetechEmulator(_IDS) as emu:
        bus = FeetechBus(BusConfig(emu.port, timeout_ms=50.0, retries=1), _IDS)
        with bus:
            bus.set_torque(True)
            goal = {sid: 2048 for sid in _IDS}
            t_end = time.perf_counter() + seconds
            next_start = time.perf_counter()
            k = 0
            while next_start < t_end:
                delay = next_start - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                t0 = time.perf_counter()
                starts.append(t0)
                try:
                    telemetry = bus.read_telemetry()
                    k += 1
                    for sid in _IDS:  # slow sine-like sweep so the servos actually move
                        goal[sid] = 2048 + int(300 * np.sin(0.5 * k * period + sid))
                    bus.write_goal_positions(goal)
                    assert len(telemetry) == len(_IDS)
                except Exception:
                    errors += 1
                t1 = time.perf_counter()
                io.append(t1 - t0)
                if t1 - t0 > period:
                    overruns += 1
                next_start += period
                if next_start < t1:  # fell behind: skip missed slots instead of bursting
                    next_start = t1
            bus.set_torque(False)
    periods = np.diff(np.array(starts)) if len(starts) > 1 else np.zeros(1)
    elapsed = starts[-1] - starts[0] if len(starts) > 1 else float("nan")

    def stats(values: np.ndarray) -> dict[str, float]:
        ms = values * 1e3
        return {
            "p50": round(float(np.percentile(ms, 50)), 4),
            "p99": round(float(np.percentile(ms, 99)), 4),
            "max": round(float(ms.max()), 4),
        }

    return {
        "cycles": len(starts),
        "target_hz": rate_hz,
        "achieved_hz": round((len(starts) - 1) / elapsed, 2) if len(starts) > 1 else 0.0,
        "overruns": overruns,
        "errors": errors,
        "period_ms": stats(periods),
        "jitter_ms": stats(np.abs(periods - period)),
        "io_ms": stats(np.array(io)),
        "servos": len(_IDS),
        "transport": "scservo_sdk over pty (emulator in-process)",
    }


def cycle_wire_bytes(servos: int, read_length: int, write_length: int = 2) -> int:
    """Bytes on the wire for one control cycle: SYNC_READ request + one status packet per servo + SYNC_WRITE.

    Protocol 0 packets: ``FF FF id len inst params.. checksum``; a status packet is ``FF FF id len err data.. chk``.
    """
    read_request = 4 + 1 + 2 + servos + 1
    replies = servos * (6 + read_length)
    write = 4 + 1 + 2 + servos * (1 + write_length) + 1
    return read_request + replies + write


def run_max_rate_benchmark(seconds: float = 3.0, baudrate: int = 1_000_000) -> dict[str, Any]:
    """Highest sustained loop rate of (sync read + Goal_Position sync write of 6 servos), back to back, over an
    emulator paced at ``baudrate`` (10 bits per byte on the wire), for the driver's read (Torque_Enable ..
    Present_Current, 31 bytes per servo) and for the telemetry-only read (position + status, 15 bytes).

    The physical limit is the wire time alone: ``cycle_wire_bytes / (baudrate / 10)`` per cycle (1 Mbit/s moves
    100 kB/s); servo return delay, USB adapter latency and host time come on top on real hardware.

    Returns:
        per read (``driver_read``, ``telemetry_read``): ``bytes_per_cycle``, ``physical_limit_hz``,
        ``achieved_hz``, ``ratio`` (achieved / limit), ``cycle_ms`` p50/p99/max, ``errors``.
    """
    if seconds <= 0 or baudrate <= 0:
        raise ValueError("seconds and baudrate must be positive")
    out: dict[str, Any] = {"baudrate": baudrate, "servos": len(_IDS), "seconds": seconds}
    with FeetechEmulator(_IDS, baudrate=baudrate) as emu:
        bus = FeetechBus(BusConfig(emu.port, baudrate=baudrate, timeout_ms=50.0, retries=1), _IDS)
        with bus:
            bus.set_torque(True)
            for label, length, read in (
                ("driver_read", p.STATE_LENGTH, lambda: bus.read_state()),
                ("telemetry_read", p.TELEMETRY_LENGTH, lambda: bus.read_telemetry()),
            ):
                wire = cycle_wire_bytes(len(_IDS), length)
                limit_hz = baudrate / 10.0 / wire
                times: list[float] = []
                errors = 0
                goal = {sid: 2048 for sid in _IDS}
                t_end = time.perf_counter() + seconds
                while time.perf_counter() < t_end:
                    t0 = time.perf_counter()
                    try:
                        read()
                        for sid in _IDS:
                            goal[sid] = 2048 + (len(times) % 64)
                        bus.write_goal_positions(goal)
                    except Exception:
                        errors += 1
                    times.append(time.perf_counter() - t0)
                cycles = np.array(times)
                achieved = len(cycles) / float(cycles.sum()) if len(cycles) else 0.0
                out[label] = {
                    "bytes_per_cycle": wire,
                    "physical_limit_hz": round(limit_hz, 1),
                    "achieved_hz": round(achieved, 1),
                    "ratio": round(achieved / limit_hz, 3),
                    "cycle_ms": {
                        "p50": round(float(np.percentile(cycles, 50)) * 1e3, 3),
                        "p99": round(float(np.percentile(cycles, 99)) * 1e3, 3),
                        "max": round(float(cycles.max()) * 1e3, 3),
                    },
                    "errors": errors,
                }
            bus.set_torque(False)
    out["transport"] = "scservo_sdk over pty, emulator in-process and paced at the baud rate"
    return out
