"""The reality gap: sim success (from ``so101 eval`` results) beside real-robot rollouts read from bags.

A real rollout is a rosbag2 (MCAP) of ``/joint_states`` and ``/joint_commands`` (``so101 bag record`` or the
record launch while the policy runs on the arm) plus a success label the operator gives (no detector sees the
real scene). The table file (``--real``, YAML)::

    conditions:
      - name: sim-only                       # e.g. sim-only, "+10 real demos", co-training 50/50
        sim_results: this                    # results.json of so101 eval, or "this" (the current evaluation)
        real:
          - {bag: bags/real_000, success: true}
          - {bag: bags/real_001, success: false}

Each row: sim success rate, real success rate, gap (sim − real) and the real runs' FRAME metrics (path length,
smoothness, per-joint and gripper tracking MSE), so "moves but does not grasp" shows on the arm as in the twin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from .errors import ConfigError, PolicyError
from .metrics import aggregate, frame_metrics


def read_rollout(bag: Path) -> dict[str, np.ndarray]:
    """``t`` (T,) s, ``q`` (T, 6) rad and ``cmd`` (T, 6) rad (the latest command at each joint state)."""
    from nodegraph.bag.reader import read_messages
    from nodegraph.interfaces.messages import deserialize
    from so101_core.robot_spec import JOINT_NAMES

    ts, qs, cmds = [], [], []
    cmd: np.ndarray | None = None
    for m in read_messages(bag, topics=("/joint_states", "/joint_commands")):
        msg = deserialize(m.cdr, m.type_name)
        names = list(msg.name)
        if not all(n in names for n in JOINT_NAMES):
            continue
        pos = np.asarray(msg.position, dtype=np.float64)
        values = np.array([pos[names.index(n)] for n in JOINT_NAMES])
        if m.topic == "/joint_commands":
            cmd = values
        else:
            ts.append(m.timestamp_ns * 1e-9)
            qs.append(values)
            cmds.append(values if cmd is None else cmd)
    if len(qs) < 3:
        raise PolicyError(f"{bag}: fewer than 3 joint states on /joint_states")
    t = np.asarray(ts)
    return {"t": t - t[0], "q": np.asarray(qs), "cmd": np.asarray(cmds)}


def load_table(path: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    conditions = data.get("conditions") if isinstance(data, dict) else None
    if not isinstance(conditions, list) or not conditions:
        raise ConfigError("conditions", "needs a non-empty list", file=str(path))
    for i, c in enumerate(conditions):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise ConfigError(f"conditions[{i}].name", "needs a name", file=str(path))
        for j, run in enumerate(c.get("real") or []):
            if not isinstance(run, dict) or "bag" not in run or not isinstance(run.get("success"), bool):
                raise ConfigError(f"conditions[{i}].real[{j}]", "needs 'bag' and 'success: true|false'", file=str(path))
    return conditions


def sim_vs_real_rows(path: Path, this_results: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per condition of the table file (see the module docstring); bag paths are relative to it."""
    base = Path(path).parent
    rows = []
    for c in load_table(path):
        sim = c.get("sim_results")
        sim_rate = None
        if sim == "this" and this_results is not None:
            sim_rate = this_results["success_rate"]
        elif isinstance(sim, str) and sim != "this":
            sim_rate = json.loads((base / sim).read_text(encoding="utf-8"))["success_rate"]
        runs = c.get("real") or []
        metrics = [frame_metrics(r["q"], r["cmd"]) for r in (read_rollout(base / run["bag"]) for run in runs)]
        rows.append(
            {
                "condition": c["name"],
                "sim": sim_rate,
                "real": (sum(run["success"] for run in runs) / len(runs)) if runs else None,
                "real_episodes": len(runs),
                "real_metrics": aggregate(metrics),
            }
        )
    return rows
