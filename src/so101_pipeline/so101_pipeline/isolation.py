"""Run a stage in a child process that cannot outlive the pipeline.

A stage library may start processes of its own (render workers, a policy server, a sim graph). If the pipeline
is SIGKILLed, those would live on and keep writing into the stage's directory while the next run resumes it.
So an isolated stage runs in a spawned child that (1) asks the kernel for SIGTERM when its parent dies
(``PR_SET_PDEATHSIG``), (2) leads its own process group, and (3) on SIGTERM signals that group (its workers)
and unwinds (the library's ``finally`` blocks stop what they started). Progress and the result come back over
a pipe; what the stage prints goes to its log. A child still running at the slice's end (``ctx.deadline``) is
stopped the same way, and the stage ends with :class:`~.errors.SliceEnded`.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from nodegraph.launch.lifetime import die_with_parent

from .errors import SliceEnded, StageError

POLL_S = 0.2
JOIN_S = 60.0
SLICE_STOP_S = 20.0
"""At a slice's end, seconds a stage's process gets to unwind after SIGTERM before SIGKILL."""


def _noop(completed: float, total: float | None, text: str) -> None:
    return None


def _on_sigterm(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)  # this process's group: the stage's worker processes
    raise SystemExit(128 + signum)


def _host(run: Callable[[Any], dict[str, Any]], ctx: Any, conn: Connection, parent: int, log: str) -> None:
    hook = die_with_parent(parent)  # SIGTERM when the pipeline dies; exits at once if it already has
    if hook is not None:
        hook()
    os.setpgid(0, 0)
    os.environ.update(ctx.options.get("env", {}))  # before the stage imports torch or OpenGL
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the pipeline, which stops us by SIGTERM
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)

    def progress(completed: float, total: float | None, text: str) -> None:
        conn.send(("progress", (completed, total, text)))

    try:
        conn.send(("result", run(dataclasses.replace(ctx, progress=progress))))
    except SliceEnded as exc:
        conn.send(("sliced", str(exc).removeprefix(f"slice ended in stage {exc.stage!r}: ")))
    except StageError as exc:
        traceback.print_exc()
        conn.send(("error", str(exc).removeprefix(f"stage {exc.stage!r}: ")))
    except Exception as exc:
        traceback.print_exc()
        conn.send(("error", f"{type(exc).__name__}: {exc} (log: {log})"))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def run_isolated(run: Callable[[Any], dict[str, Any]], ctx: Any) -> dict[str, Any]:
    """``run(ctx)`` in a child process (see the module docstring); ``run`` must be a module-level function
    and ``ctx`` a :class:`~.runner.StageContext` (its ``progress`` is called here, in the parent)."""
    spawn = mp.get_context("spawn")
    receiver, sender = spawn.Pipe(duplex=False)
    child = spawn.Process(
        target=_host,
        args=(run, dataclasses.replace(ctx, progress=_noop), sender, os.getpid(), str(ctx.log_path)),
        name=f"so101-stage-{ctx.name}",
    )
    child.start()
    sender.close()
    result: dict[str, Any] | None = None
    error: str | None = None
    sliced: str | None = None
    try:
        while result is None and error is None and sliced is None:
            if ctx.deadline is not None and time.time() >= ctx.deadline:
                child.terminate()  # SIGTERM: it stops its workers and unwinds; the next slice resumes its work
                child.join(SLICE_STOP_S)
                if child.is_alive() and child.pid is not None:
                    os.killpg(child.pid, signal.SIGKILL)  # its group: the stage and its workers
                    child.join()
                sliced = "stopped at the slice's end; the next run resumes it"
            elif receiver.poll(POLL_S):
                try:
                    kind, value = receiver.recv()
                except EOFError:
                    break
                if kind == "progress":
                    ctx.progress(*value)
                elif kind == "result":
                    result = value
                elif kind == "sliced":
                    sliced = value
                else:
                    error = value
            elif not child.is_alive():
                break
        child.join(JOIN_S)
    except BaseException:
        child.terminate()  # SIGTERM: it stops its workers and unwinds
        child.join(JOIN_S)
        raise
    finally:
        receiver.close()
    if sliced is not None:
        raise SliceEnded(ctx.name, sliced)
    if error is not None:
        raise StageError(ctx.name, error)
    if result is None:
        raise StageError(ctx.name, f"its process exited with {child.exitcode} before finishing (log: {ctx.log_path})")
    return result
