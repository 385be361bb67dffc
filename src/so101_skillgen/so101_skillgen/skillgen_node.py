"""skillgen: the ``/skillgen/generate`` action server (so101_msgs/action/GenerateDemos) over the SkillGen library.

One goal at a time: a goal arriving while another runs is **rejected** (GoalResponse.REJECT; the node logs
why), as rclpy users expect from a single-goal server that does not pre-empt. A goal whose fields are wrong
(unknown or empty ``seeds_dir``, ``num_demos`` 0, a ``task`` that is neither the seeds' task nor a
``task.yaml`` variant, or a variant whose scene the seeds were not recorded in, ``render`` true, no
``output_dir``) is accepted and aborted at once with ``result.message`` naming the field, e.g.
``rejected: goal.num_demos: must be >= 1`` (the action protocol's rejection carries no text; Nav2 reports
reasons the same way, in the result).

While generating: feedback at least once a second (``feedback_hz``) and after every committed attempt:
``stage`` ``generating``, ``attempted``, ``succeeded``, failures by reason (parallel arrays), ``eta_s``
(−1 until a demo was kept in this run). Cancel is checked after every committed attempt, so it takes
effect within one attempt; the output directory then holds a valid partial result, and a later goal with
the same ``output_dir`` (and seeds, random_seed, config) resumes it (:mod:`so101_skillgen.output`).
The result gives the output directory as ``dataset_path`` (demo files; ``bag_path`` stays empty: bags
and LeRobot datasets are written by the dataset stage), counts, ``success_rate`` = succeeded ÷ attempted
and a message.

``task``: empty or the seeds' task id (the base, single-vial scene), or a ``task.yaml`` variant, e.g.
``multi_vial`` (the scene, expert layout and success rule generation then uses).

Parameters: ``config`` (skillgen.yaml path, "" = the config directory's), ``dr_profile`` (dr.yaml
profile, "" = base ranges), ``workers`` (attempt workers, 1 = in the node's process), ``executor``
(``local`` processes | ``ray``), ``address`` (Ray cluster, "" = local Ray), ``feedback_hz`` (≥ 1).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nodegraph.graph.api import Message, Node, ServerGoalHandle
from nodegraph.graph.declared_params import declare_params
from so101_core.seeds.format import SeedFormatError
from so101_core.sim.config import load_task_variant
from so101_core.sim.errors import SimError
from so101_core.sim.randomization import load_dr_config

from .config import SkillGenConfig, load_skillgen_config
from .errors import SeedMismatchError, SkillGenError
from .executors import make_executor
from .generation import Generator, ProgressEvent, load_seed_dir

ACTION = "so101_msgs/action/GenerateDemos"


@dataclass(frozen=True)
class SkillGenNodeParams:
    """Parameters (units in the module docstring); read once at start."""

    config: str = ""
    dr_profile: str = ""
    workers: int = 1
    executor: str = "local"
    address: str = ""
    feedback_hz: float = 1.0

    @classmethod
    def declare(cls, node: Node) -> SkillGenNodeParams:
        p = declare_params(node, cls, read_only=False)
        if p.workers < 1:
            raise SkillGenError(f"parameter workers: must be >= 1, got {p.workers}")
        if p.executor not in ("local", "ray"):
            raise SkillGenError(f"parameter executor: local | ray, got {p.executor!r}")
        if not p.feedback_hz >= 1.0:
            raise SkillGenError(f"parameter feedback_hz: must be >= 1 Hz, got {p.feedback_hz}")
        return p


class _Progress:
    """What the feedback reports; updated by the generation thread, read by the feedback timer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stage = "loading"
        self.attempted = 0
        self.kept = 0
        self.target = 0
        self.kept_start = 0
        self.started = False
        self.t_start = time.monotonic()
        self.failures: Counter[str] = Counter()


class SkillGenNode:
    """The action server; generation runs in the goal's thread (the transport's), one goal at a time."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.params = SkillGenNodeParams.declare(node)
        self.cfg: SkillGenConfig = load_skillgen_config(self.params.config or None)
        self.dr = load_dr_config(profile=self.params.dr_profile) if self.params.dr_profile else None
        self._lock = threading.Lock()
        self._busy = False
        self.server = node.create_action_server(ACTION, "skillgen/generate", self._execute, self._on_goal)
        node.logger.info(f"ready: skillgen/generate (workers {self.params.workers}, {self.params.executor})")

    # ------------------------------------------------------------------ goal handling
    def _on_goal(self, goal: Message) -> bool:
        with self._lock:
            if self._busy:
                self.node.logger.warning(
                    f"goal rejected: a generation is running; one goal at a time (output_dir {goal.output_dir!r})"
                )
                return False
            self._busy = True
            return True

    def _validate(self, goal: Any) -> tuple[str, str] | None:
        """(field, problem) of the first bad goal field, or None."""
        if int(goal.num_demos) < 1:
            return "num_demos", "must be >= 1"
        if not str(goal.output_dir):
            return "output_dir", "required: where the demos are written (and resumed from)"
        if bool(goal.render):
            return "render", "rendering is the dataset stage's (so101 dataset render); send render: false"
        root = Path(str(goal.seeds_dir))
        if not str(goal.seeds_dir) or not root.is_dir():
            return "seeds_dir", f"{str(goal.seeds_dir)!r} is not a directory"
        if not any(p for p in root.glob("**/*.npz") if ".tmp" not in p.name):
            return "seeds_dir", f"{root} holds no seed files (*.npz)"
        return None

    def _result(self, message: str, attempted: int = 0, kept: int = 0, path: str = "") -> Message:
        return self.node.message(
            f"{ACTION}_Result",
            dataset_path=path,
            bag_path="",
            attempted=attempted,
            succeeded=kept,
            success_rate=float(kept / attempted) if attempted else 0.0,
            message=message,
        )

    def _feedback(self, handle: ServerGoalHandle, prog: _Progress) -> None:
        with prog.lock:
            done_run = prog.kept - prog.kept_start
            elapsed = time.monotonic() - prog.t_start
            eta = (prog.target - prog.kept) * elapsed / done_run if done_run > 0 else -1.0
            reasons = sorted(prog.failures)
            msg = self.node.message(
                f"{ACTION}_Feedback",
                stage=prog.stage,
                attempted=prog.attempted,
                succeeded=prog.kept,
                failure_reasons=reasons,
                failure_counts=[prog.failures[r] for r in reasons],
                eta_s=float(eta),
            )
        handle.publish_feedback(msg)

    def _execute(self, handle: ServerGoalHandle) -> Message:
        try:
            return self._generate(handle)
        finally:
            with self._lock:
                self._busy = False

    def _generate(self, handle: ServerGoalHandle) -> Message:
        goal: Any = handle.request
        bad = self._validate(goal)
        if bad is not None:
            text = f"rejected: goal.{bad[0]}: {bad[1]}"
            self.node.logger.warning(text)
            handle.abort()
            return self._result(text)
        prog = _Progress()
        prog.target = int(goal.num_demos)
        timer = self.node.create_timer(1.0 / self.params.feedback_hz, lambda: self._feedback(handle, prog))
        try:
            demos, names = load_seed_dir(str(goal.seeds_dir))
            tasks = sorted({d.task for d in demos})
            task = load_task_variant(str(goal.task))
            if str(goal.task) and task is None and str(goal.task) not in tasks:
                text = (
                    f"rejected: goal.task: {str(goal.task)!r} is neither a task of the seeds (they hold {tasks}) "
                    "nor a task.yaml variant"
                )
                handle.abort()
                timer.cancel()
                return self._result(text)
            cfg = replace(self.cfg, random_seed=int(goal.random_seed))
            try:
                gen = Generator(demos, cfg, names=names, dr=self.dr, task=task)  # None: the base task
            except SeedMismatchError as exc:
                timer.cancel()
                handle.abort()
                return self._result(f"rejected: goal.task: {exc}")
        except (SkillGenError, SeedFormatError, SimError) as exc:
            timer.cancel()
            handle.abort()
            return self._result(f"rejected: goal.seeds_dir: {exc}")
        except BaseException:
            timer.cancel()
            raise

        def on_event(ev: ProgressEvent) -> None:
            with prog.lock:
                prog.stage = "generating"
                if not prog.started:  # a resumed run: only this run's demos pace the ETA
                    prog.started = True
                    prog.kept_start = ev.kept - (ev.reason is None)
                prog.attempted, prog.kept = ev.attempted, ev.kept
                if ev.reason is not None:
                    prog.failures[ev.reason] += 1
            self._feedback(handle, prog)

        p = self.params
        try:
            with make_executor(gen, p.workers, backend=p.executor, address=p.address or None) as ex:
                with prog.lock:
                    prog.stage = "generating"
                summary = gen.run(
                    str(goal.output_dir), int(goal.num_demos), on_event, executor=ex,
                    should_stop=lambda: handle.is_cancel_requested,
                    max_attempts=int(goal.max_attempts) or None,
                )  # fmt: skip
        except SkillGenError as exc:
            handle.abort()
            return self._result(f"generation failed: {exc}", path=str(goal.output_dir))
        finally:
            timer.cancel()
        with prog.lock:
            prog.failures = Counter(summary.failures_by_reason)
            prog.attempted, prog.kept, prog.stage = summary.attempted, summary.kept, "done"
        self._feedback(handle, prog)
        counts = (summary.attempted, summary.kept, summary.out_dir)
        if summary.cancelled:
            handle.canceled()
            return self._result(
                f"cancelled after {summary.attempted} attempts with {summary.kept}/{summary.target} kept; "
                "send the same goal again to resume",
                *counts,
            )
        if summary.complete:
            handle.succeed()
            return self._result(
                f"kept {summary.kept} of {summary.attempted} attempts ({summary.yield_:.0%}; workshop rule "
                f"{summary.yield_workshop:.0%})",
                *counts,
            )
        handle.abort()
        return self._result(
            f"attempt budget spent: {summary.kept}/{summary.target} kept after {summary.attempted} attempts", *counts
        )


def main(args: list[str] | None = None) -> int:
    from nodegraph.transport.runtime import run_node

    return run_node(SkillGenNode, "skillgen", args)


if __name__ == "__main__":
    raise SystemExit(main())
