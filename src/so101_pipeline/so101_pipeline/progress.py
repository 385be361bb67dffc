"""Progress on the terminal (rich): one bar per stage with its state (skipped, resumed, why it runs)."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from .runner import ProgressFn


class RichReporter:
    """A :class:`~.runner.Reporter` drawing on a rich :class:`Progress` (use as a context manager)."""

    def __init__(self, console: Console | None = None) -> None:
        if console is None:  # a copy of stderr: the runner may point fd 2 at a stage's log while it runs
            stream = os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1, encoding="utf-8")
            console = Console(file=stream, force_terminal=sys.stderr.isatty() or None)
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]{task.fields[stage]:<9}"),
            BarColumn(bar_width=30),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[text]}"),
            console=self.console,
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> RichReporter:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def stage_started(self, name: str, reason: str, resumed: bool) -> ProgressFn:
        text = (
            "[dim]unchanged, skipped[/dim]" if reason == "skip" else ("resuming: " if resumed else "running: ") + reason
        )
        task = self.progress.add_task(name, total=None, stage=name, text=text)
        self._tasks[name] = task

        def update(completed: float, total: float | None, detail: str) -> None:
            self.progress.update(task, completed=completed, total=total, text=detail)

        return update

    def stage_finished(self, name: str, skipped: bool, wall_s: float, reason: str) -> None:
        task = self._tasks[name]
        current = next(t for t in self.progress.tasks if t.id == task)
        total = current.total if current.total else 1
        done = "[dim]skipped (unchanged)[/dim]" if skipped else f"[green]done[/green] in {wall_s:.1f} s"
        self.progress.update(task, total=total, completed=total, text=done)
