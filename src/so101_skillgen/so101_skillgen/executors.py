"""Where attempts run: one interface, three executors (in-process, local processes, Ray).

Attempt ``i`` is a pure function of the recipe and ``i`` (:func:`~.generation.attempt_seeds`), so an
executor may run attempts anywhere and in any order; :meth:`~.generation.Generator.run` commits the
results strictly in index order and stops at the target, which makes the kept set identical to the
in-process run's. A worker that dies (killed, out of memory, a Ray node lost) is replaced and its
attempt is submitted again; as the result is committed once, by index, it is neither lost nor counted
twice.

A *recipe* (:class:`AttemptRecipe`) is what a worker needs to build its own twin, tracker and library:
the seeds and the configs (all picklable).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

from so101_core.seeds.format import SeedDemo
from so101_core.sim.config import SimConfig, TaskConfig
from so101_core.sim.randomization import DRConfig
from so101_core.threads import thread_env

from .config import SkillGenConfig
from .errors import SkillGenError

if TYPE_CHECKING:
    from .attempt import AttemptOutcome
    from .generation import Generator

AttemptResult = tuple[int, int, "AttemptOutcome"]
"""(attempt index, scene seed, outcome)."""


class ExecutorError(SkillGenError):
    """An executor cannot start or keeps losing its workers."""


@dataclass(frozen=True)
class AttemptRecipe:
    """Everything a worker needs to run attempts (pickled to each worker once)."""

    demos: tuple[SeedDemo, ...]
    names: tuple[str, ...]
    cfg: SkillGenConfig
    sim: SimConfig | None
    dr: DRConfig | None
    task: TaskConfig | None
    config_dir: Path | None = None

    def build(self) -> Generator:
        from .generation import Generator

        return Generator(
            self.demos, self.cfg, names=self.names, sim=self.sim, dr=self.dr, task=self.task,
            config_dir=self.config_dir, check_reach=False,
        )  # fmt: skip


class AttemptExecutor(ABC):
    """Runs attempts by index. ``submit`` never blocks; ``collect`` returns finished ones (any order)."""

    workers: int = 1
    _queue: deque[int]  # submitted, not started

    @abstractmethod
    def submit(self, index: int) -> None:
        """Queue attempt ``index``."""

    def drop_queued(self) -> None:
        """Forget the attempts submitted but not started: a run that ends leaves no work to the next."""
        self._queue.clear()

    @abstractmethod
    def collect(self, timeout: float) -> list[AttemptResult]:
        """Results finished since the last call, waiting up to ``timeout`` s for at least one."""

    def close(self) -> None:  # noqa: B027 - nothing to stop for in-process executors
        """Stop the workers (idempotent)."""

    def wait_ready(self, timeout: float = 300.0) -> None:  # noqa: B027 - in-process: always ready
        """Block until every worker has built its generator (so start-up can be timed apart)."""

    @property
    def restarts(self) -> int:
        """Workers replaced after dying."""
        return 0

    def __enter__(self) -> AttemptExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InProcessExecutor(AttemptExecutor):
    """Runs each attempt in this process, on an existing :class:`Generator` (one at a time)."""

    def __init__(self, generator: Generator) -> None:
        self._gen = generator
        self._queue: deque[int] = deque()

    def submit(self, index: int) -> None:
        self._queue.append(index)

    def collect(self, timeout: float) -> list[AttemptResult]:
        if not self._queue:
            return []
        i = self._queue.popleft()
        scene, outcome = self._gen.attempt(i)
        return [(i, scene, outcome)]


SINGLE_THREADED = thread_env(1)
"""Environment of a local worker: one attempt per core, so no BLAS / OpenMP pool of its own (without it each of
N workers starts N threads of its own); set when the worker starts (:mod:`so101_core.threads`)."""


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` updated with ``values`` inside the block (what a spawned process inherits), then restored."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _worker_main(recipe: AttemptRecipe, conn: Connection) -> None:
    """Local worker process: build once, then answer attempt indices until told to stop (None)."""
    import torch

    torch.set_num_threads(1)
    gen = recipe.build()
    conn.send(("ready", os.getpid()))
    while True:
        try:
            index = conn.recv()
        except EOFError:
            return
        if index is None:
            return
        scene, outcome = gen.attempt(int(index))
        conn.send(("done", (int(index), scene, outcome)))


@dataclass
class _Slot:
    proc: Any
    conn: Connection
    busy: int | None = None
    ready: bool = False


class LocalProcessExecutor(AttemptExecutor):
    """``workers`` local processes (spawned: nothing inherited but the recipe), one attempt each at a time.

    A worker that exits without answering is replaced and its attempt queued again (front of the queue);
    more than ``max_restarts`` replacements raise :class:`ExecutorError`.
    """

    def __init__(self, recipe: AttemptRecipe, workers: int, *, max_restarts: int = 16, start_timeout: float = 300.0):
        if workers < 1:
            raise ExecutorError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self._recipe = recipe
        self._ctx = mp.get_context("spawn")
        self._queue: deque[int] = deque()
        self._slots: list[_Slot] = [self._spawn() for _ in range(workers)]
        self._restarts = 0
        self._max_restarts = max_restarts
        self._start_timeout = start_timeout
        self._closed = False

    def _spawn(self) -> _Slot:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_worker_main, args=(self._recipe, child), daemon=True)
        with _environment(SINGLE_THREADED):
            proc.start()
        child.close()
        return _Slot(proc, parent)

    @property
    def restarts(self) -> int:
        return self._restarts

    def worker_pids(self) -> list[int]:
        """Process ids of the current workers (tests kill one to check the retry)."""
        return [int(s.proc.pid) for s in self._slots]

    def busy_pids(self) -> list[int]:
        """Process ids of the workers running an attempt now."""
        return [int(s.proc.pid) for s in self._slots if s.busy is not None]

    def wait_ready(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while not all(s.ready for s in self._slots):
            if time.monotonic() > deadline:
                raise ExecutorError(f"local workers not ready after {timeout} s")
            pending = [s.conn for s in self._slots if not s.ready]
            for c in wait(pending, timeout=1.0):
                k = next(i for i, s in enumerate(self._slots) if s.conn is c)
                try:
                    kind, _ = self._slots[k].conn.recv()
                except (EOFError, OSError):
                    self._replace(k)
                    continue
                self._slots[k].ready = kind == "ready"

    def submit(self, index: int) -> None:
        self._queue.append(index)
        self._dispatch()

    def _dispatch(self) -> None:
        for s in self._slots:
            if s.ready and s.busy is None and self._queue:
                i = self._queue.popleft()
                try:
                    s.conn.send(i)
                    s.busy = i
                except (BrokenPipeError, OSError):
                    self._queue.appendleft(i)

    def _replace(self, k: int) -> None:
        s = self._slots[k]
        if not s.ready:  # died while building its generator: a setup error, not a lost worker
            s.proc.join(timeout=5.0)
            self.close()
            raise ExecutorError(
                f"a local worker failed to start (exit code {s.proc.exitcode}); run the command in the main "
                "process first to see the error (a script that starts workers needs `if __name__ == '__main__':`)"
            )
        if s.busy is not None:
            self._queue.appendleft(s.busy)
        s.conn.close()
        s.proc.join(timeout=1.0)
        self._restarts += 1
        if self._restarts > self._max_restarts:
            raise ExecutorError(f"local workers died {self._restarts} times (exit code {s.proc.exitcode})")
        self._slots[k] = self._spawn()

    def collect(self, timeout: float) -> list[AttemptResult]:
        out: list[AttemptResult] = []
        deadline = time.monotonic() + timeout
        while True:
            conns = {s.conn: k for k, s in enumerate(self._slots)}
            ready = wait(list(conns), timeout=max(0.0, deadline - time.monotonic()))
            for c in ready:
                k = conns[c]  # type: ignore[index]
                s = self._slots[k]
                try:
                    kind, payload = s.conn.recv()
                except (EOFError, OSError):
                    self._replace(k)
                    continue
                if kind == "ready":
                    s.ready = True
                else:
                    out.append(payload)
                    s.busy = None
            for k, s in enumerate(self._slots):  # a worker killed before it could even answer
                if not s.proc.is_alive() and s.conn not in ready:
                    self._replace(k)
            self._dispatch()
            if out or time.monotonic() >= deadline:
                return out

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for s in self._slots:
            with contextlib.suppress(BrokenPipeError, OSError):
                s.conn.send(None)
        for s in self._slots:
            s.proc.join(timeout=2.0)
            if s.proc.is_alive():
                s.proc.terminate()
                s.proc.join(timeout=2.0)
            s.conn.close()


class RayExecutor(AttemptExecutor):
    """``workers`` Ray actors (one twin each). ``address``: None = a local Ray started here, else passed to
    ``ray.init(address=...)`` (``auto`` or ``ray://host:10001`` for a cluster). A lost actor is recreated and
    its attempt resubmitted."""

    def __init__(self, recipe: AttemptRecipe, workers: int, address: str | None = None, *, max_restarts: int = 16):
        try:
            import ray
        except ImportError as exc:  # pragma: no cover - ray is in the venv
            raise ExecutorError("Ray is not installed (pip install ray); use the local-process executor") from exc
        if workers < 1:
            raise ExecutorError(f"workers must be >= 1, got {workers}")
        self._ray = ray
        self._own = not ray.is_initialized()
        if self._own:
            kw: dict[str, Any] = {"address": address} if address else {"num_cpus": workers, "include_dashboard": False}
            ray.init(ignore_reinit_error=True, log_to_driver=False, **kw)
        self.workers = workers
        self._actor_cls: Any = ray.remote(num_cpus=1, max_restarts=0, runtime_env={"env_vars": SINGLE_THREADED})(
            _RayWorker
        )
        self._recipe_ref = ray.put(recipe)
        self._actors: list[Any] = [self._actor_cls.remote(self._recipe_ref) for _ in range(workers)]
        self._idle = list(range(workers))
        self._queue: deque[int] = deque()
        self._inflight: dict[Any, tuple[int, int]] = {}  # ref -> (actor slot, attempt)
        self._restarts = 0
        self._max_restarts = max_restarts

    @property
    def restarts(self) -> int:
        return self._restarts

    def actor_pids(self) -> list[int]:
        """Process ids of the actors (tests kill one)."""
        actors: list[Any] = self._actors
        return [int(p) for p in self._ray.get([a.pid.remote() for a in actors])]

    def submit(self, index: int) -> None:
        self._queue.append(index)
        self._dispatch()

    def _dispatch(self) -> None:
        while self._idle and self._queue:
            k, i = self._idle.pop(0), self._queue.popleft()
            actor: Any = self._actors[k]
            self._inflight[actor.attempt.remote(i)] = (k, i)

    def collect(self, timeout: float) -> list[AttemptResult]:
        ray = self._ray
        out: list[AttemptResult] = []
        if not self._inflight:
            self._dispatch()
            if not self._inflight:
                return out
        done, _ = ray.wait(list(self._inflight), num_returns=1, timeout=timeout)
        more, _ = ray.wait(list(self._inflight), num_returns=len(self._inflight), timeout=0)
        for ref in {*done, *more}:
            k, i = self._inflight.pop(ref)
            try:
                out.append(ray.get(ref))
                self._idle.append(k)
            except ray.exceptions.RayActorError:
                self._restarts += 1
                if self._restarts > self._max_restarts:
                    raise ExecutorError(f"Ray workers died {self._restarts} times") from None
                self._actors[k] = self._actor_cls.remote(self._recipe_ref)
                self._idle.append(k)
                self._queue.appendleft(i)
        self._dispatch()
        return out

    def close(self) -> None:
        for a in getattr(self, "_actors", []):
            with contextlib.suppress(Exception):  # already gone
                self._ray.kill(a)
        self._actors = []
        if getattr(self, "_own", False):
            self._ray.shutdown()
            self._own = False


class _RayWorker:
    """Ray actor body: one generator, attempts by index."""

    def __init__(self, recipe: AttemptRecipe) -> None:
        import torch

        torch.set_num_threads(1)
        self._gen = recipe.build()

    def pid(self) -> int:
        return os.getpid()

    def attempt(self, index: int) -> AttemptResult:
        scene, outcome = self._gen.attempt(index)
        return index, scene, outcome


def make_executor(
    generator: Generator, workers: int = 1, *, backend: str = "local", address: str | None = None
) -> AttemptExecutor:
    """``workers`` ≤ 1 and no address: in process; else ``backend`` ``local`` (processes) or ``ray``."""
    if backend not in ("local", "ray"):
        raise ExecutorError(f"unknown executor backend {backend!r} (local | ray)")
    if workers <= 1 and address is None and backend == "local":
        return InProcessExecutor(generator)
    recipe = generator.recipe()
    if backend == "ray":
        return RayExecutor(recipe, max(1, workers), address)
    return LocalProcessExecutor(recipe, workers)
