"""Evaluation metrics: success with a Wilson interval, and FRAME trajectory metrics (robometric-frame 0.3.0
definitions, re-implemented: the package is not installed here).

Trajectories are ``(L, D)`` arrays (joint space, rad, unless said otherwise). Definitions:
- path length PL = Σ‖p[i+1] − p[i]‖;
- path smoothness PS = (1/(L−2)) Σ‖p[i+2] − 2p[i+1] + p[i]‖ (0.3.0 normalisation; ≤ 0.2.0 divided by PL);
- DTW with Euclidean cost and steps (i−1, j), (i, j−1), (i−1, j−1); nDTW = exp(−DTW / (|R| · d)),
  d = PL(R) / (|R| − 1) (1 when 0);
- ATE = mean‖p[i] − r[i]‖ (no alignment) and RTE(Δ=1) = mean‖(p[i+1] − p[i]) − (r[i+1] − r[i])‖, over the
  common length;
- action MSE = mean over t of ‖a[t] − â[t]‖² (sum over dims, FRAME's ActionAccuracy) against a reference
  episode's actions;
- per-joint MSE = mean over t of (commanded[t, j] − observed[t, j])² (tracking), gripper MSE = that of index 5:
  a policy that closes the gripper on the vial leaves a large gripper error (the jaws stop at the vial), one that
  moves but never grasps leaves almost none ("moves but does not grasp").
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from so101_core.arrays import F64

FRAME_VERSION = "robometric-frame 0.3.0 definitions"


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> Interval:
    """Wilson score interval for ``successes`` of ``n`` (95 % by default); (0, 1) for n = 0."""
    if n <= 0:
        return Interval(0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be in 0..{n}, got {successes}")
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(low, high)


def exact_mcnemar_p(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value of paired outcomes: ``only_a`` pairs where only A succeeded, ``only_b``
    where only B did (a binomial test of ``min`` of them among their sum at 1/2); 1.0 without discordant pairs."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"counts must be >= 0, got {only_a}, {only_b}")
    n, k = only_a + only_b, min(only_a, only_b)
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n)


def paired_comparison(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any]:
    """Two evaluations' episode rows (each with ``seed``, ``success``, ``workshop_success``) paired by scene seed:
    ``same_scenes``; per rule (``success``, ``workshop_success``) the successes of A and of B on those scenes, the
    scenes only A and only B solved, and the exact McNemar p. A seed repeated within one evaluation is a
    ValueError (pairs would be ambiguous)."""
    by_seed = []
    for name, rows in (("A", a), ("B", b)):
        seeds = [int(r["seed"]) for r in rows]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"evaluation {name} runs a scene seed more than once")
        by_seed.append(dict(zip(seeds, rows, strict=True)))
    common = sorted(set(by_seed[0]) & set(by_seed[1]))
    out: dict[str, Any] = {"same_scenes": len(common)}
    for rule in ("success", "workshop_success"):
        pairs = [(bool(by_seed[0][s][rule]), bool(by_seed[1][s][rule])) for s in common]
        only_a = sum(x and not y for x, y in pairs)
        only_b = sum(y and not x for x, y in pairs)
        out[rule] = {
            "a_successes": sum(x for x, _ in pairs),
            "b_successes": sum(y for _, y in pairs),
            "only_a": only_a,
            "only_b": only_b,
            "exact_mcnemar_p": exact_mcnemar_p(only_a, only_b),
        }
    return out


def success_by_target_slot(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per target slot (rows' ``target_slot``; -1 or absent: none, skipped): ``episodes``, ``successes``,
    ``success_rate`` and ``wilson_95``, keyed by the slot as text (JSON keys), in slot order. Which scenes fail:
    with the first free slot as target, the slot says how many vials stood in the rack."""
    counts: dict[int, list[int]] = {}
    for row in rows:
        slot = int(row.get("target_slot", -1))
        if slot >= 0:
            tally = counts.setdefault(slot, [0, 0])
            tally[0] += 1
            tally[1] += bool(row["success"])
    out: dict[str, dict[str, Any]] = {}
    for slot, (n, ok) in sorted(counts.items()):
        iv = wilson_interval(ok, n)
        out[str(slot)] = {"episodes": n, "successes": ok, "success_rate": ok / n, "wilson_95": [iv.low, iv.high]}
    return out


def failure_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """How many failed episodes give each reason (rows' ``failure``, :mod:`.outcome`), most frequent first."""
    return dict(Counter(str(r["failure"]) for r in rows if r.get("failure")).most_common())


def releases_by_outcome(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Where the vial was let go (rows' ``release_placement``, :func:`.outcome.release_placement`), per outcome
    (``success`` or the failure reason; rows without a release skipped): ``episodes`` and the median and 90th
    percentile of ``target_offset_mm`` (xy from the target slot's centre) and ``height_mm`` (vial centre above the
    mat; 64 mm is a vial seated in the rack). Whether the failed placements were let go off the cell or too high."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        let_go = row.get("release_placement")
        if let_go and let_go.get("target_offset_mm") is not None:
            groups.setdefault("success" if row["success"] else str(row.get("failure")), []).append(let_go)
    out: dict[str, dict[str, Any]] = {}
    for outcome, found in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        offset = [p["target_offset_mm"] for p in found]
        height = [p["height_mm"] for p in found]
        out[outcome] = {
            "episodes": len(found),
            "offset_mm_p50": round(float(np.percentile(offset, 50)), 1),
            "offset_mm_p90": round(float(np.percentile(offset, 90)), 1),
            "height_mm_p50": round(float(np.percentile(height, 50)), 1),
            "height_mm_p90": round(float(np.percentile(height, 90)), 1),
        }
    return out


def _traj(x: npt.ArrayLike, min_len: int, name: str) -> F64:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or len(a) < min_len:
        raise ValueError(f"{name} needs an (L >= {min_len}, D) trajectory, got shape {a.shape}")
    return a


def path_length(p: npt.ArrayLike) -> float:
    a = _traj(p, 2, "path length")
    return float(np.linalg.norm(np.diff(a, axis=0), axis=1).sum())


def path_smoothness(p: npt.ArrayLike) -> float:
    a = _traj(p, 3, "path smoothness")
    return float(np.linalg.norm(np.diff(a, n=2, axis=0), axis=1).sum() / (len(a) - 2))


def dtw(p: npt.ArrayLike, r: npt.ArrayLike) -> float:
    a, b = _traj(p, 1, "DTW"), _traj(r, 1, "DTW")
    cost = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    acc = np.full((len(a) + 1, len(b) + 1), np.inf)
    acc[0, 0] = 0.0
    for i in range(1, len(a) + 1):
        row_prev, row = acc[i - 1], acc[i]
        c = cost[i - 1]
        for j in range(1, len(b) + 1):
            row[j] = c[j - 1] + min(row_prev[j], row[j - 1], row_prev[j - 1])
    return float(acc[len(a), len(b)])


def ndtw(p: npt.ArrayLike, r: npt.ArrayLike) -> float:
    b = _traj(r, 2, "nDTW")
    d = path_length(b) / (len(b) - 1)
    return float(math.exp(-dtw(p, b) / (len(b) * (d if d > 0 else 1.0))))


def _common(p: npt.ArrayLike, r: npt.ArrayLike, min_len: int, name: str) -> tuple[F64, F64]:
    a, b = _traj(p, min_len, name), _traj(r, min_len, name)
    n = min(len(a), len(b))
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{name}: dimension mismatch {a.shape} vs {b.shape}")
    return a[:n], b[:n]


def ate(p: npt.ArrayLike, r: npt.ArrayLike) -> float:
    a, b = _common(p, r, 1, "ATE")
    return float(np.linalg.norm(a - b, axis=1).mean())


def rte(p: npt.ArrayLike, r: npt.ArrayLike, delta: int = 1) -> float:
    a, b = _common(p, r, delta + 1, "RTE")
    return float(np.linalg.norm((a[delta:] - a[:-delta]) - (b[delta:] - b[:-delta]), axis=1).mean())


def action_errors(pred: npt.ArrayLike, target: npt.ArrayLike) -> tuple[float, F64]:
    """(action MSE summed over dims, per-joint MSE (D,)) over the common length."""
    a, b = _common(pred, target, 1, "action MSE")
    sq = (a - b) ** 2
    return float(sq.sum(axis=1).mean()), sq.mean(axis=0)


def frame_metrics(
    observed: npt.ArrayLike,
    commanded: npt.ArrayLike,
    reference_q: npt.ArrayLike | None = None,
    reference_actions: npt.ArrayLike | None = None,
) -> dict[str, float]:
    """Per-episode FRAME metrics of the observed joint path (T, 6) rad; against a reference episode when given.

    Keys: ``path_length``, ``path_smoothness`` (arm joints), ``joint_mse/<i>`` (i = 0..5) and ``gripper_mse``
    (commanded vs observed), and with a reference ``dtw``, ``ndtw``, ``ate``, ``rte`` (arm joints),
    ``action_mse``, ``ref_joint_mse/<i>``, ``ref_gripper_mse`` (commanded vs reference actions).
    """
    q = _traj(observed, 3, "observed path")
    cmd = _traj(commanded, 1, "commanded path")
    _, tracking = action_errors(cmd, q)
    out = {
        "path_length": path_length(q[:, :5]),
        "path_smoothness": path_smoothness(q[:, :5]),
        **{f"joint_mse/{i}": float(v) for i, v in enumerate(tracking)},
        "gripper_mse": float(tracking[5]),
    }
    if reference_q is not None:
        ref = _traj(reference_q, 2, "reference path")
        out.update(dtw=dtw(q[:, :5], ref[:, :5]), ndtw=ndtw(q[:, :5], ref[:, :5]))
        out.update(ate=ate(q[:, :5], ref[:, :5]), rte=rte(q[:, :5], ref[:, :5]))
    if reference_actions is not None:
        mse, per_joint = action_errors(cmd, reference_actions)
        out["action_mse"] = mse
        out.update({f"ref_joint_mse/{i}": float(v) for i, v in enumerate(per_joint)})
        out["ref_gripper_mse"] = float(per_joint[5])
    return out


def aggregate(per_episode: list[dict[str, float]]) -> dict[str, float]:
    """Mean of each metric over the episodes that have it."""
    keys = sorted({k for m in per_episode for k in m})
    return {k: float(np.mean([m[k] for m in per_episode if k in m])) for k in keys}
