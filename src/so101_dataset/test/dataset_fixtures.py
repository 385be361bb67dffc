"""Kept-demo fixtures in the SkillGen output format (``demo_NNNNNN.npz``); a uniquely named module, since
every package's ``conftest`` shares one name when the whole suite runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_demos(directory: Path, count: int, steps: int = 12, *, hz: float = 30.0) -> list[Path]:
    """``count`` short demos: the arm sweeps from home while the gripper closes; objects where the
    nominal scene puts them. Saved with the seed format's own writer (what SkillGen's output uses)."""
    from so101_core.seeds.format import SeedDemo, save_seed
    from so101_core.sim.randomization import DRConfig
    from so101_core.sim.twin import Twin

    twin = Twin(dr=DRConfig.disabled())
    home = twin.joint_positions()
    objects = {k: np.tile(np.r_[p.position, p.quaternion], (steps, 1)) for k, p in twin.object_poses().items()}
    twin.close()
    paths = []
    for i in range(count):
        s = np.linspace(0.0, 1.0, steps)[:, None]
        q = home + s * np.array([0.3 + 0.05 * i, -0.2, 0.2, 0.1, 0.0, 0.0])
        q[:, 5] = np.linspace(0.9, -0.1, steps)
        demo = SeedDemo(
            t=np.arange(steps) / hz,
            joint_positions=q,
            actions=q + 0.01,
            object_poses=objects,
            success=True,
            source="skillgen" if i % 2 == 0 else "scripted",
            seed=1000 + i,
            control_hz=hz,
            extra={
                "attempt": i,
                "random_seed": 7,
                "sources": [  # as SkillGen's AttemptRunner records them
                    {"slot": 0, "kind": "grasp", "object": "vial", "seed": f"seed_{i % 2}.npz", "candidates": []},
                    {"slot": 1, "kind": "place", "object": "rack", "seed": "seed_1.npz", "candidates": []},
                ],
            },
        )
        paths.append(save_seed(demo, directory / f"demo_{i:06d}.npz"))
    return paths
