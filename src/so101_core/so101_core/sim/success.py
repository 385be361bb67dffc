"""Both success rules of an episode, fed the same :class:`~.task.TaskState` once per control step.

Our detector (:class:`~.task.SuccessDetector`) and the upstream workshop's rule
(:class:`~.workshop_rule.WorkshopRule`) judge the same thing: the vial upright in *its target slot* (the first
free slot of ``task.yaml`` ``fill_order``, :attr:`~.randomization.EpisodeSample.target_slot`), released, held
there, and every vial standing in a pre-filled slot still upright in its own. Every caller (the scripted
rollout, SkillGen's recorder and keep filter, the graph evaluation's monitor, the seed recorder, a vectorized
evaluator) feeds them ``Twin.task_state()`` or a state built the same way (:meth:`TaskState.of`).

Use::

    rules = SuccessRules.of(twin.task, twin.config)
    twin.reset(seed); rules.reset()
    for action in actions:
        twin.step(action)
        ours, workshop = rules.update(twin.task_state())
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import SimConfig, TaskConfig
from .task import SuccessDetector, TaskState
from .workshop_rule import WorkshopRule


@dataclass
class SuccessRules:
    """Our detector and the workshop rule of one episode (both latch once reached)."""

    detector: SuccessDetector
    workshop: WorkshopRule

    @staticmethod
    def of(task: TaskConfig, sim: SimConfig) -> SuccessRules:
        """Both rules for ``task`` in the scene of ``sim`` (its rack, its control rate)."""
        return SuccessRules(SuccessDetector(task, sim.rack), WorkshopRule(sim.rack, sim.physics.control_hz))

    def reset(self) -> None:
        """Forget the episode."""
        self.detector.reset()
        self.workshop.reset()

    def update(self, state: TaskState) -> tuple[bool, bool]:
        """Feed one control step; (our detector succeeded, workshop rule succeeded), latched."""
        return self.detector.update_state(state), self.workshop.update_state(state)

    @property
    def succeeded(self) -> bool:
        """Our detector has succeeded this episode."""
        return self.detector.succeeded

    @property
    def workshop_succeeded(self) -> bool:
        """The workshop rule has succeeded this episode."""
        return self.workshop.succeeded
