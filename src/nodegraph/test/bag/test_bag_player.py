"""Player timing with an injected fake clock: order, rate, offset, topic filter, drift catch-up, loop/stop."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from _bagdata import FB, JS, feedback, joint_state
from nodegraph.bag import BagArgumentError, BagWriter, play

T0 = 5_000_000_000
OFFSETS_S = [0.0, 0.1, 0.25, 0.4, 1.0]


class FakeClock:
    """Monotonic time that only moves when the player sleeps (or a test advances it)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture(scope="module")
def bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("play") / "timed"
    with BagWriter(path) as writer:
        writer.add_topic("/joint_states", JS)
        writer.add_topic("/fb", FB)
        for i, offset in enumerate(OFFSETS_S):
            stamp = T0 + round(offset * 1e9)
            writer.write("/joint_states" if i % 2 == 0 else "/fb", stamp, joint_state(i) if i % 2 == 0 else feedback(i))
    return path


def _record(clock: FakeClock) -> tuple[list[tuple[float, str]], Callable[[str, str, bytes], None]]:
    log: list[tuple[float, str]] = []

    def publish(topic: str, type_name: str, cdr: bytes) -> None:
        assert type_name in (JS, FB) and cdr[:2] == b"\x00\x01"
        log.append((round(clock() - 100.0, 6), topic))

    return log, publish


def test_recorded_timing_scaled_by_rate(bag: Path) -> None:
    clock = FakeClock()
    log, publish = _record(clock)
    assert play(bag, publish, rate=2.0, clock=clock, sleep=clock.sleep) == len(OFFSETS_S)
    assert [t for t, _ in log] == pytest.approx([o / 2 for o in OFFSETS_S])
    assert [topic for _, topic in log] == ["/joint_states", "/fb"] * 2 + ["/joint_states"]


def test_topics_filter_and_start_offset(bag: Path) -> None:
    clock = FakeClock()
    log, publish = _record(clock)
    assert play(bag, publish, topics=["/joint_states"], start_offset_s=0.2, clock=clock, sleep=clock.sleep) == 2
    assert log == [(pytest.approx(0.05), "/joint_states"), (pytest.approx(0.8), "/joint_states")]


def test_slow_publish_does_not_accumulate_drift(bag: Path) -> None:
    clock = FakeClock()
    times: list[float] = []

    def slow_publish(topic: str, type_name: str, cdr: bytes) -> None:
        times.append(clock() - 100.0)
        clock.now += 0.2  # each publish takes 200 ms

    play(bag, slow_publish, clock=clock, sleep=clock.sleep)
    # due at 0, .1, .25, .4, 1.0: late ones go out at once, then the schedule is back on time
    assert times == pytest.approx([0.0, 0.2, 0.4, 0.6, 1.0])


def test_loop_until_stop_event(bag: Path) -> None:
    clock = FakeClock()
    stop = threading.Event()
    count = 0

    def publish(topic: str, type_name: str, cdr: bytes) -> None:
        nonlocal count
        count += 1
        if count == 12:
            stop.set()

    assert play(bag, publish, loop=True, stop_event=stop, clock=clock, sleep=clock.sleep) == 12


def test_invalid_rate(bag: Path) -> None:
    with pytest.raises(BagArgumentError):
        play(bag, lambda *a: None, rate=0)
    with pytest.raises(BagArgumentError):
        play(bag, lambda *a: None, start_offset_s=-1)
