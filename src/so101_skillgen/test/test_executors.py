"""Sharded generation: 2 local processes and 2 Ray workers keep the same demos as one worker, and a worker
killed with SIGKILL mid-attempt is replaced, its attempt neither lost nor counted twice."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from nodegraph.testing import wait_until
from so101_core.seeds.format import load_seed
from so101_core.seeds.from_rollout import scripted_seeds
from so101_core.sim.twin import Twin
from so101_skillgen.attempt import AttemptOutcome
from so101_skillgen.config import load_skillgen_config
from so101_skillgen.executors import AttemptExecutor, AttemptResult, LocalProcessExecutor, RayExecutor
from so101_skillgen.generation import LOOKAHEAD_PER_WORKER, GenerationSummary, Generator

N = 5


@pytest.fixture(scope="module")
def gen() -> Generator:
    return Generator(scripted_seeds(Twin(), list(range(300, 308)))[:4], load_skillgen_config())


@pytest.fixture(scope="module")
def reference(gen: Generator, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, bytes]]:
    out = tmp_path_factory.mktemp("serial")
    assert gen.run(out, N).complete
    return _kept(out)


def _kept(out: Path) -> list[tuple[int, bytes]]:
    demos = [load_seed(p) for p in sorted(out.glob("demo_*.npz"))]
    return [(int(d.extra["attempt"]), np.ascontiguousarray(d.actions).tobytes()) for d in demos]


def _committed(out: Path) -> int:
    try:
        return int(json.loads((out / "progress.json").read_text())["next_attempt"])
    except (OSError, ValueError, KeyError):
        return 0


def _single_threaded(pid: int) -> bool:
    """Whether process ``pid`` started with one BLAS / OpenMP thread (N workers must not start N pools of N)."""
    env = dict(kv.split("=", 1) for kv in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in kv)
    return all(env.get(k) == "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"))


def _run_and_kill(gen: Generator, ex: AttemptExecutor, out: Path, victim: int | None) -> GenerationSummary:
    """Generate N on ``ex`` in a thread; once an attempt is committed, SIGKILL process ``victim`` (a worker)."""
    box: list[GenerationSummary] = []
    thread = threading.Thread(target=lambda: box.append(gen.run(out, N, executor=ex)))
    thread.start()
    if victim is not None:
        wait_until(lambda: _committed(out) >= 1 or not thread.is_alive(), 120.0, "a committed attempt", 0.01)
        os.kill(victim, signal.SIGKILL)
    thread.join(300)
    assert box, "generation did not finish"
    return box[0]


def test_two_local_processes_keep_the_same_demos_and_survive_a_killed_worker(
    gen: Generator, reference: list[tuple[int, bytes]], tmp_path: Path
) -> None:
    with LocalProcessExecutor(gen.recipe(), 2) as ex:
        ex.wait_ready()
        assert all(_single_threaded(pid) for pid in ex.worker_pids())
        assert "OPENBLAS_NUM_THREADS" not in os.environ  # set for the workers only
        summary = _run_and_kill(gen, ex, tmp_path / "a", None)
        assert summary.kept == N and _kept(tmp_path / "a") == reference
        victim = ex.busy_pids() or ex.worker_pids()
        summary = _run_and_kill(gen, ex, tmp_path / "b", victim[0])
        assert all(_single_threaded(pid) for pid in ex.worker_pids())  # the replacement too
    assert summary.kept == N and summary.worker_restarts >= 1
    assert _kept(tmp_path / "b") == reference  # the killed worker's attempt was redone once, in order
    failures = json.loads((tmp_path / "b" / "failures.json").read_text()) if summary.attempted > N else []
    attempts = [a for a, _ in reference] + [int(f["attempt"]) for f in failures]
    assert sorted(attempts) == list(range(summary.attempted))  # every attempt committed exactly once


@pytest.mark.usefixtures("one_ray_instance")  # conftest.py at the root
def test_two_ray_workers_keep_the_same_demos_and_survive_a_killed_worker(
    gen: Generator, reference: list[tuple[int, bytes]], tmp_path: Path
) -> None:
    pytest.importorskip("ray")
    with RayExecutor(gen.recipe(), 2) as ex:
        pids = ex.actor_pids()
        summary = _run_and_kill(gen, ex, tmp_path / "ray", pids[0])
    assert summary.kept == N and summary.worker_restarts >= 1
    assert _kept(tmp_path / "ray") == reference


class _SlowFirstAttempt(AttemptExecutor):
    """Four workers on which every attempt fails at once, except attempt 0: it finishes only once the
    generator hands out nothing new, as a slow attempt does while the other workers drain the queue."""

    workers = 4

    def __init__(self) -> None:
        self._queue: deque[int] = deque()
        self.submitted: list[int] = []
        self.holding = False
        self.handed_out_while_holding = 0

    def submit(self, index: int) -> None:
        self._queue.append(index)
        self.submitted.append(index)

    def collect(self, timeout: float) -> list[AttemptResult]:
        if self._queue:
            self.holding = self.holding or 0 in self._queue
            done = [i for i in self._queue if i != 0]
            self._queue.clear()
            return [(i, i, _failed()) for i in done]
        if self.holding:
            self.holding, self.handed_out_while_holding = False, len(self.submitted)
            return [(0, 0, _failed())]
        return []


def _failed() -> AttemptOutcome:
    empty = np.zeros((0, 6))
    return AttemptOutcome(False, "miss", "a scheduling test", empty, empty, {})


def test_a_slow_attempt_does_not_starve_the_other_workers(gen: Generator, tmp_path: Path) -> None:
    """Results are committed in order, yet attempts keep being handed out while attempt 0 runs: the whole
    window ahead of the oldest uncommitted attempt (it was 2 per worker, which left 16 workers idle)."""
    ex = _SlowFirstAttempt()
    summary = gen.run(tmp_path, N, executor=ex, max_attempts=300)
    assert ex.handed_out_while_holding == LOOKAHEAD_PER_WORKER * ex.workers >= 32 * ex.workers
    assert ex.submitted == list(range(300))
    assert summary.attempted == 300 and summary.kept == 0
    failures = json.loads((tmp_path / "failures.json").read_text())
    assert [int(f["attempt"]) for f in failures] == list(range(300))  # committed in order, each once


def test_a_run_that_ends_leaves_no_queued_attempts_to_the_next(gen: Generator, tmp_path: Path) -> None:
    """A cancelled run (or one that reached its target) drops what it queued: a reused executor starts the
    next run on that run's own attempts, not on the last run's leftovers."""
    ex = _SlowFirstAttempt()
    ex.collect = lambda timeout: [(i, i, _failed()) for i in [ex._queue.popleft()]]  # type: ignore[method-assign]
    summary = gen.run(tmp_path, N, executor=ex, max_attempts=300, should_stop=lambda: True)
    assert summary.cancelled and summary.attempted == 1
    assert len(ex.submitted) == LOOKAHEAD_PER_WORKER * ex.workers and not ex._queue
