"""The generation output directory: kept demos, failures, progress (resume) and summary.

Layout: ``demo_000000.npz`` … (:func:`~so101_core.seeds.format.save_seed`, atomic), ``failures.json``
(every failed attempt and its reason), ``failed/attempt_000007.npz`` (each failed attempt's trajectory, the
seed format with ``success`` false: replay or inspect it), ``progress.json`` (next attempt index, run
fingerprint) and ``summary.json``. Every file is replaced atomically and written *before* the progress
that counts it, so a kill at any moment resumes after the last committed attempt: nothing duplicated or
corrupt, and (attempts being deterministic) the same files as an uninterrupted run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from so101_core.atomic import write_json
from so101_core.seeds.format import SeedDemo, SeedFormatError, load_seed, save_seed

from .errors import ResumeError

DEMO_GLOB = "demo_*.npz"


class OutputDir:
    """State of one output directory; :meth:`open` resumes what an earlier (crashed) run left."""

    def __init__(self, root: Path, fingerprint: dict[str, Any]) -> None:
        self.root = root
        self.fingerprint = fingerprint
        self.next_attempt = 0
        self.kept = 0
        self.kept_workshop = 0  # kept demos that also passed the upstream workshop rule
        self.failures: list[dict[str, Any]] = []

    @classmethod
    def open(cls, root: str | Path, fingerprint: dict[str, Any]) -> OutputDir:
        """Create or resume ``root``. Raises :class:`ResumeError` if it was written with another fingerprint."""
        out = cls(Path(root), fingerprint)
        out.root.mkdir(parents=True, exist_ok=True)
        for stale in [*out.root.glob("*.tmp.npz"), *out.root.glob("*.tmp"), *out.root.glob("failed/*.tmp*")]:
            stale.unlink()  # half-written by a crash; the final names are untouched
        progress = out.root / "progress.json"
        if progress.is_file():
            try:
                state = json.loads(progress.read_text(encoding="utf-8"))
                old_fp, next_attempt = state["fingerprint"], int(state["next_attempt"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ResumeError(f"{progress}: unreadable progress file ({exc}); use a new output directory") from exc
            if old_fp != fingerprint:
                raise ResumeError(
                    f"{out.root} was generated with {old_fp}, not {fingerprint}; use a new output directory"
                )
            out.next_attempt = next_attempt
        last_attempt = -1
        for i, path in enumerate(sorted(out.root.glob(DEMO_GLOB))):
            if path.name != out.demo_name(i):
                raise ResumeError(f"{path}: unexpected demo file name (expected {out.demo_name(i)})")
            try:
                demo = load_seed(path)
            except SeedFormatError as exc:
                raise ResumeError(f"{path}: corrupt demo ({exc})") from exc
            last_attempt = max(last_attempt, int(demo.extra.get("attempt", -1)))
            out.kept = i + 1
            out.kept_workshop += bool(demo.extra.get("workshop_rule", False))
        out.next_attempt = max(out.next_attempt, last_attempt + 1)
        failures = out.root / "failures.json"
        if failures.is_file():
            try:
                loaded = json.loads(failures.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise ResumeError(f"{failures}: unreadable ({exc})") from exc
            out.failures = [f for f in loaded if int(f["attempt"]) < out.next_attempt]
        return out

    @staticmethod
    def demo_name(index: int) -> str:
        return f"demo_{index:06d}.npz"

    def add_demo(self, demo: SeedDemo, attempt: int) -> Path:
        path = save_seed(demo, self.root / self.demo_name(self.kept))
        self.kept += 1
        self.kept_workshop += bool(demo.extra.get("workshop_rule", False))
        self._advance(attempt)
        return path

    def add_failure(self, failure: tuple[dict[str, Any], SeedDemo | None], attempt: int) -> None:
        """Record a failed attempt: its trajectory under ``failed/`` (when it has steps), then the record."""
        record, trajectory = failure
        if trajectory is not None:
            path = save_seed(trajectory, self.root / "failed" / f"attempt_{attempt:06d}.npz")
            record = {**record, "trajectory": str(path.relative_to(self.root))}
        self.failures.append(record)
        write_json(self.root / "failures.json", self.failures)
        self._advance(attempt)

    def _advance(self, attempt: int) -> None:
        self.next_attempt = attempt + 1
        write_json(self.root / "progress.json", {"fingerprint": self.fingerprint, "next_attempt": self.next_attempt})

    def write_summary(self, summary: dict[str, Any]) -> Path:
        path = self.root / "summary.json"
        write_json(path, summary)
        return path
