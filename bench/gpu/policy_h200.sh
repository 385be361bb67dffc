#!/bin/bash
# The policy on one H200 machine (issue 23's figures), as product commands, in slices of a time-limited job:
#   1. five scripted seeds through the graph (`so101 seeds record --scripted`);
#   2. SkillGen, wide DR, local processes (`so101 skillgen generate`);
#   3. the rendered frames: dataset units at 3 x 160x120 keeping their renders (`so101 dataset render`,
#      render.keep_frames), which training reads without a video round trip;
#   4. the sweep: bench/gpu/policy_sweep.yaml's runs side by side, each scored by the fast evaluator
#      (`so101 train --sweep`);
#   5. execution variants (horizon, blend weight, replan interval) of the best run in the fast evaluator, and the
#      best variant on the training demos' own scenes (`--set scene_seeds=...`: fits its data, or not even that?);
#   6. the graph evaluation of the best run and variant: 50 episodes, GRAPHS graphs side by side (`so101 eval`);
#   7. `so101 bench policy` (inference at 3 x 640x480 of the best run's policy type and architecture, loop jitter)
#      → bench/results/policy_h200.json.
# Every step resumes: run the script again (same RUN, same machine) until it prints "policy_h200: done".
# SO101_SLICE_S: seconds this call may take; no step starts without time for it, and training stops in time.
# Sizes (a small rehearsal on a CPU): DEMOS, WIDTH, HEIGHT, EPISODES, EPISODE_S, GRAPHS, SWEEP, DEVICE, FULL, RUN;
# FRAMES_PER_PASS: frames per render pass (dataset.yaml render.frames_per_pass; default 32, config/pipeline_h200.yaml's);
# VARIANTS: the execution variants, "horizon alpha replan [temporal_ensemble_coeff];..." (default four; the fourth
# field, 0 when left out, > 0 runs ACT's temporal ensemble instead of the EMA, e.g. "32 0.2 1 0.01").
# UNTIL=install|seeds|skillgen|render|train_scenes|graph: stop after that step (a call whose carried wheels serve only
# the steps up to it).
# TRAIN_SCENES=0 skips the check on the training demos' scenes. DEMOS_FROM=DIR: seeds/ and demos/ made elsewhere
# (steps 1-2 on a CPU machine, carried in DIR) stand for steps 1 and 2. SkillGen's config: config/skillgen.yaml with
# rollout.execution_noise_rad = EXECUTION_NOISE_RAD (default 0.02: DART demos, bench/results/policy_h100_session8;
# 0 = clean demos), or SKILLGEN_CONFIG=FILE as it is.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
RUN=${RUN:-/tmp/policy_run}
DEMOS=${DEMOS:-240}
WORKERS=${WORKERS:-$(nproc)}
GRAPHS=${GRAPHS:-4}
EPISODES=${EPISODES:-50} EPISODE_S=${EPISODE_S:-20}
SWEEP=${SWEEP:-bench/gpu/policy_sweep.yaml}
WIDTH=${WIDTH:-160} HEIGHT=${HEIGHT:-120}
DEVICE=${DEVICE:-cuda}
FULL=${FULL---full-resolution}  # FULL= (empty) on a CPU: no 3 x 640x480 latency
START=$(date +%s)
DEADLINE=$((START + ${SO101_SLICE_S:-100000}))
left() { echo $((DEADLINE - $(date +%s))); }
. bench/gpu/device_env.sh  # carried wheels and GL loaders installed, the environment exported
[ "${UNTIL:-}" = install ] && { echo "policy_h200: installed (UNTIL)"; exit 0; }
[ -n "${OUT:-}" ] && export SO101_BENCH_RESULTS=$OUT
so101() { "$PY" -m so101_cli "$@"; }
mkdir -p "$RUN"
if [ -n "${DEMOS_FROM:-}" ] && [ ! -f "$RUN/.skillgen" ]; then
  cp -r "$DEMOS_FROM/seeds" "$DEMOS_FROM/demos" "$RUN/" && touch "$RUN/.seeds" "$RUN/.skillgen"
fi
stamp() { echo "== $1: $(( $(date +%s) - START )) s into this call, $(left) s left" | tee -a "$RUN/times.log"; }
keep() {  # every call, however it ends: the run's small records back under $OUT (one archive: the tool returns 8 files;
  # the graph's per-episode rows too: target slot, final placement)
  [ -n "${OUT:-}" ] || return 0
  (cd "$RUN" && find . -maxdepth 4 \( -name times.log -o -name sweep.json -o -name train_result.json \
    -o -name fast_results.json -o -name fast_episodes.jsonl -o -name results.json -o -name render_times.json \
    -o -name episodes.jsonl -o -name '*.mp4' -o -name report.html -o -name "tracking_*.png" \) -print0 |
    tar czf "$OUT/policy_run_records.tgz" --null -T -) || true
}
trap keep EXIT
need() { [ "$(left)" -ge "$1" ] || { echo "policy_h200: slice ends ($(left) s left, $2 needs $1): run again"; exit 0; }; }
counted() {  # RESULTS N: the results file exists and counts N episodes (one cut by its --time-limit does not)
  [ -f "$1" ] && "$PY" -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['episodes'] < int(sys.argv[2]))" "$1" "$2"
}

if [ ! -f "$RUN/.seeds" ]; then
  need 90 seeds; stamp seeds
  so101 seeds record --scripted -n 5 --out "$RUN/seeds" --real-time-factor 3 --service-timeout 120
  touch "$RUN/.seeds"
fi
[ "${UNTIL:-}" = seeds ] && { echo "policy_h200: stopped after seeds (UNTIL)"; exit 0; }
if [ ! -f "$RUN/.skillgen" ]; then
  need 150 skillgen; stamp skillgen
  if [ -z "${SKILLGEN_CONFIG:-}" ]; then
    SKILLGEN_CONFIG=$RUN/skillgen.yaml
    sed -e "s/^  execution_noise_rad: [0-9.]*/  execution_noise_rad: ${EXECUTION_NOISE_RAD-0.02}/" config/skillgen.yaml \
      > "$SKILLGEN_CONFIG"
    grep -q "^  execution_noise_rad: ${EXECUTION_NOISE_RAD-0.02} " "$SKILLGEN_CONFIG"  # the key is still where sed looks
  fi
  so101 skillgen generate --seeds "$RUN/seeds" -n "$DEMOS" --out "$RUN/demos" --workers "$WORKERS" \
    --executor local --dr-profile wide --config "$SKILLGEN_CONFIG"
  touch "$RUN/.skillgen"
fi
[ "${UNTIL:-}" = skillgen ] && { echo "policy_h200: stopped after skillgen (UNTIL)"; exit 0; }
if [ ! -f "$RUN/.render" ]; then
  need 150 render; stamp render
  sed -e 's/^  keep_frames: false/  keep_frames: true/' -e 's/^  gl: auto/  gl: egl/' \
    -e "s/^  frames_per_pass: [0-9]*/  frames_per_pass: ${FRAMES_PER_PASS:-32}/" config/dataset.yaml > "$RUN/dataset.yaml"
  grep -q "^  frames_per_pass: ${FRAMES_PER_PASS:-32} " "$RUN/dataset.yaml"  # the key is still where sed looks
  so101 dataset render --demos "$RUN/demos" --out "$RUN/dataset" --config "$RUN/dataset.yaml" \
    --width "$WIDTH" --height "$HEIGHT" --workers "$WORKERS"
  "$PY" - "$RUN/dataset" > "$RUN/render_times.json" <<'PYEOF'
import json, pathlib, sys
units = sorted(pathlib.Path(sys.argv[1]).glob("episodes/episode_*/episode.json"))
totals: dict = {}
gl: set = set()
for u in units:
    meta = json.loads(u.read_text())
    gl.add(meta.get("gl_renderer", ""))
    for k, v in meta.get("times", {}).items():
        totals[k] = totals.get(k, 0.0) + v
print(json.dumps({"units": len(units), "gl_renderer": sorted(gl), "seconds_summed_over_units": totals}, indent=1))
PYEOF
  touch "$RUN/.render"
fi
[ "${UNTIL:-}" = render ] && { echo "policy_h200: stopped after render (UNTIL)"; exit 0; }
if [ ! -f "$RUN/sweep/sweep.json" ] || grep -q '"complete": false' "$RUN/sweep/sweep.json"; then
  need 120 sweep; stamp sweep
  # the runs stop in time for their final checkpoint; scoring waits for a slice in which every run finished
  so101 train --sweep "$SWEEP" --dataset "$RUN/dataset" --out "$RUN/sweep" \
    --time-limit $(( $(left) - 45 )) --envs "$WORKERS" > "$RUN/sweep.out"
  grep -q '"complete": false' "$RUN/sweep/sweep.json" && { echo "policy_h200: training continues next call"; exit 0; }
fi
BEST=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['runs'][0]['run'])" "$RUN/sweep/sweep.json")
CKPT=$RUN/sweep/$BEST
IFS=";" read -r -a VARIANT_LIST <<<"${VARIANTS-16 0.2 8;16 1.0 8;16 0.5 4;32 0.5 8}"  # "": the sweep's scoring alone
for variant in "${VARIANT_LIST[@]}"; do
  read -r H A R T <<<"$variant"; T=${T:-0}; dir=$RUN/fast/h${H}_a${A}_r${R}$([ "$T" = 0 ] || echo "_te$T")
  counted "$dir/fast_results.json" "$EPISODES" && continue
  need 100 "fast variant $variant"; stamp "fast eval h=$H alpha=$A replan=$R temporal ensemble=$T"
  so101 eval --fast --checkpoint "$CKPT" -n "$EPISODES" --out "$dir" --envs "$WORKERS" --set dr_profile=wide \
    --time-limit $(( $(left) - 20 )) \
    --set horizon="$H" --set blend_alpha="$A" --set replan_steps="$R" --set temporal_ensemble_coeff="$T" \
    --set device="$DEVICE" --set episode_s="$EPISODE_S"
  counted "$dir/fast_results.json" "$EPISODES" || { echo "policy_h200: slice ended in variant $variant: run again"; exit 0; }
done
CHOICE=$("$PY" - "$RUN/fast" <<'PYEOF'
import json, pathlib, sys
rows = [(json.loads(p.read_text()), p.parent.name) for p in pathlib.Path(sys.argv[1]).glob("h*/fast_results.json")]
if rows:
    best = max(rows, key=lambda r: (r[0]["success_rate"], r[0]["workshop_rate"]))[0]["config"]
    print(best["horizon"], best["blend_alpha"], best["replan_steps"], best.get("temporal_ensemble_coeff", 0.0))
else:  # no variants: eval.yaml's execution, as the sweep scored it
    from so101_policy.config import load_eval_config
    e = load_eval_config()
    print(e.horizon, e.blend_alpha, e.replan_steps, e.temporal_ensemble_coeff)
PYEOF
)
read -r H A R T <<<"$CHOICE"
if [ "${TRAIN_SCENES:-1}" != 0 ] && ! counted "$RUN/fast/train_scenes/fast_results.json" "$EPISODES"; then
  need 100 "fast eval on the training scenes"; stamp "fast eval on the training scenes"
  SCENES=$("$PY" -c "import json,sys; from so101_core.seeds.format import load_seeds
print(json.dumps([d.seed for d in load_seeds(sys.argv[1])][:int(sys.argv[2])]))" "$RUN/demos" "$EPISODES")
  so101 eval --fast --checkpoint "$CKPT" -n "$EPISODES" --out "$RUN/fast/train_scenes" --envs "$WORKERS" \
    --time-limit $(( $(left) - 20 )) \
    --set dr_profile=wide --set "scene_seeds=$SCENES" --set horizon="$H" --set blend_alpha="$A" \
    --set replan_steps="$R" --set temporal_ensemble_coeff="$T" --set device="$DEVICE" --set episode_s="$EPISODE_S"
  counted "$RUN/fast/train_scenes/fast_results.json" "$EPISODES" || { echo "policy_h200: slice ended: run again"; exit 0; }
fi
[ "${UNTIL:-}" = train_scenes ] && { echo "policy_h200: stopped after the training-scene check (UNTIL)"; exit 0; }
RTF=2; [ "$R" -lt 4 ] && RTF=1  # a query every step or two: real time, so the server's answers keep pace
if ! counted "$RUN/graph/results.json" "$EPISODES"; then
  need 240 "graph evaluation"; stamp "graph evaluation h=$H alpha=$A replan=$R"
  # the episodes run stay in $RUN/graph: the next call goes on from them
  so101 eval --checkpoint "$CKPT" -n "$EPISODES" --out "$RUN/graph" --set graphs="$GRAPHS" --set real_time_factor=$RTF \
    --time-limit $(( $(left) - 60 )) \
    --set dr_profile=wide --set horizon="$H" --set blend_alpha="$A" --set replan_steps="$R" --set device="$DEVICE" \
    --set temporal_ensemble_coeff="$T" --set videos=2 --set episode_s="$EPISODE_S"
  counted "$RUN/graph/results.json" "$EPISODES" || { echo "policy_h200: graph evaluation goes on next call"; exit 0; }
fi
[ "${UNTIL:-}" = graph ] && { echo "policy_h200: stopped after the graph evaluation (UNTIL)"; exit 0; }
need 120 "bench policy"; stamp "bench policy"
# shellcheck disable=SC2086
so101 bench policy --checkpoint "$CKPT" $FULL --train-config "$CKPT/train.yaml" --device "$DEVICE" --calls 100 \
  --jitter-seconds 8 --train-result "$CKPT/train_result.json" --eval-results "$RUN/graph/results.json" --demos "$DEMOS" --label h200
"$PY" - "$RUN" "${SO101_BENCH_RESULTS:-bench/results}/policy_h200.json" "$SWEEP" <<'PYEOF'
import hashlib, json, pathlib, sys
run, path = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
out = json.loads(path.read_text())
sweep = json.loads((run / "sweep" / "sweep.json").read_text())
best = sweep["runs"][0]
fast = {p.parent.name: json.loads(p.read_text()) for p in (run / "fast").glob("*/fast_results.json")}
variants = {k: v for k, v in fast.items() if k != "train_scenes"}
graph = json.loads((run / "graph" / "results.json").read_text())
recipe = (run / "sweep" / best["run"] / "train.yaml").read_text()
out.update({
    "workshop_success_rate": graph["workshop_rate"], "wilson_low": graph["wilson_95"][0],
    "wilson_high": graph["wilson_95"][1], "episodes": graph["episodes"], "graph_eval": graph["config"],
    "train_wall_s": sweep["train_wall_s"], "sweep": sweep["runs"], "recipe": best["run"],
    "recipe_config_hash": hashlib.sha256(recipe.encode()).hexdigest()[:16], "recipe_config": recipe,
    "fast_eval": {k: {x: v[x] for x in ("success_rate", "wilson_95", "workshop_rate", "episodes_per_min", "config")}
                  for k, v in fast.items()},
    # the sweep's own scoring counts too (VARIANTS="" runs no other fast evaluation)
    "fast_eval_episodes_per_min": max([best["fast_eval_episodes_per_min"]]
                                      + [v["episodes_per_min"] for v in variants.values()]),
    "command": f"bench/gpu/policy_h200.sh (SWEEP={sys.argv[3]})",
})
path.write_text(json.dumps(out, indent=2) + "\n")
print(json.dumps({k: out[k] for k in ("sim_success_rate", "workshop_success_rate", "wilson_low", "episodes",
                                      "train_samples_per_s", "fast_eval_episodes_per_min", "inference_ms_p99")}))
PYEOF
for f in times.log sweep/sweep.json graph/results.json graph/report.html; do
  [ -n "${OUT:-}" ] && [ -f "$RUN/$f" ] && cp "$RUN/$f" "$OUT/$(echo "$f" | tr / _)"
done
echo "policy_h200: done"
