#!/bin/bash
# Does a policy solve the scenes it was trained on? (issue 23's first question, at CPU scale.)
# The main job's data (config/pipeline.yaml up to the dataset: 5 scripted seeds, 20 SkillGen demos, one 96x72
# camera, rendered frames kept), a small ACT trained hard on it (bench/cpu/policy_fit_train.yaml), then the fast
# evaluator twice with the same execution settings: on the training demos' own scenes (`scene_seeds`) and on as
# many held-out seeds. A policy that fails its own training scenes at a low loss has a closed-loop defect; one that
# solves them and fails the others needs more data. Figures: bench/results/policy_fit_cpu.json.
#
# Usage: bench/cpu/policy_fit_check.sh [RUN_DIR]   (resumable: every step skips what is done; ~30 min on 2 cores)
# Sizes: EPISODES (scenes per side, default 10), STEPS (default the YAML's), ENVS (default 2).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
RUN=${1:-/tmp/policy_fit}
EPISODES=${EPISODES:-10}
ENVS=${ENVS:-2}
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
so101() { "$PY" -m so101_cli "$@"; }
mkdir -p "$RUN"
so101 pipeline run --config config/pipeline.yaml --out "$RUN/pipeline" --until dataset > "$RUN/pipeline.log" 2>&1 ||
  { echo "pipeline failed: $RUN/pipeline.log" >&2; exit 1; }
DATA=$RUN/pipeline/dataset
steps=()
[ -n "${STEPS:-}" ] && steps=(--steps "$STEPS")
so101 train --dataset "$DATA" --config bench/cpu/policy_fit_train.yaml --out "$RUN/act" "${steps[@]}" \
  > "$RUN/train.log" 2>&1 || { echo "training failed: $RUN/train.log" >&2; exit 1; }
SCENES=$("$PY" -c "import json,sys; from so101_core.seeds.format import load_seeds
print(json.dumps([d.seed for d in load_seeds(sys.argv[1])][:int(sys.argv[2])]))" "$RUN/pipeline/skillgen" "$EPISODES")
common=(--checkpoint "$RUN/act" -n "$EPISODES" --envs "$ENVS" --set device=cpu --set episode_s=12)
[ -f "$RUN/train_scenes/fast_results.json" ] ||
  so101 eval --fast "${common[@]}" --out "$RUN/train_scenes" --set "scene_seeds=$SCENES" > "$RUN/eval.log" 2>&1
[ -f "$RUN/held_out/fast_results.json" ] ||
  so101 eval --fast "${common[@]}" --out "$RUN/held_out" >> "$RUN/eval.log" 2>&1
"$PY" - "$RUN" "${SO101_BENCH_RESULTS:-bench/results}/policy_fit_cpu.json" <<'PYEOF'
import json, pathlib, platform, subprocess, sys, datetime
run, path = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
train = json.loads((run / "act" / "train_result.json").read_text())
rows = {}
for side in ("train_scenes", "held_out"):
    r = json.loads((run / side / "fast_results.json").read_text())
    rows[side] = {k: r[k] for k in ("episodes", "successes", "success_rate", "wilson_95", "workshop_successes",
                                   "workshop_rate", "episodes_per_min")}
    rows[side]["seeds"] = [json.loads(line)["seed"] for line in (run / side / "fast_episodes.jsonl").open()]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
out = {
    "benchmark": "policy_fit_cpu",
    "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    "machine": {"host": platform.node(), "cores": __import__("os").cpu_count(), "python": platform.python_version()},
    "command": "bench/cpu/policy_fit_check.sh (config/pipeline.yaml data, bench/cpu/policy_fit_train.yaml)",
    "code": f"commit {commit}",
    "train": {k: train[k] for k in ("steps", "final_loss", "samples_per_s", "data_source")},
    "train_config": (run / "act" / "train.yaml").read_text() if (run / "act" / "train.yaml").is_file() else None,
    **rows,
}
path.write_text(json.dumps(out, indent=2) + "\n")
print(json.dumps({k: out[k] for k in ("train", "train_scenes", "held_out")}, indent=2))
PYEOF
