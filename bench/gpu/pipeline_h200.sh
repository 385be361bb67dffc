#!/bin/bash
# The full-size pipeline (config/pipeline_h200.yaml) on one H200 machine, as one command: seeds, SkillGen,
# rendering (EGL, 16 processes), ACT training and 50 evaluation episodes on CUDA, then the report. Its figures
# go to bench/results/pipeline_h200.json (and $OUT/ when run through the device tool).
#
# Usage, from the repository root on the GPU machine, with the venv (or the wheels) in place:
#   bench/gpu/pipeline_h200.sh [OUT_DIR]          # default out/pipeline_h200
# With a per-command time limit shorter than the run (the device tool's is 10 minutes), set
#   SO101_SLICE_S=570 bench/gpu/pipeline_h200.sh  # stops cleanly within ~570 s; run it again to go on
# `so101 pipeline run` reads SO101_SLICE_S itself: training stops in time for its final checkpoint, the
# evaluation starts no episode it cannot finish, other stages are stopped at the slice's end and resume; it
# exits with 75 until the pipeline has finished. The summary's per-stage `produced_wall_s` adds up the slices.
# On a bare device machine the carried wheels (.whl, .whl_b, .whl_c: bench/gpu/carry_wheels.sh; one call carries at
# most 64 MiB) and GL loaders (.gl) are installed by bench/gpu/device_env.sh, one folder per call while the machine
# is warm (30 s between calls); UNTIL=install stops after installing what a call carried:
#   calls 1, 2 (carry .whl .gl, then .whl_b .gl): UNTIL=install bench/gpu/pipeline_h200.sh
#   call 3 (carry .whl_c .gl: mlflow, which the pipeline's tracking opens first): SO101_SLICE_S=570 bench/gpu/pipeline_h200.sh
#   calls 4.. (carry .gl): SO101_SLICE_S=570 bench/gpu/pipeline_h200.sh, until it prints no "run again"
# An experiment on the profile: SET="a.b.c=value ..." (each one `--set` of `so101 pipeline run`, the same in every
# slice; items split at spaces, so write lists without them: train.set.cameras=[ego,top]), its own OUT_DIR argument
# and LABEL (bench/results/pipeline_<LABEL>.json; default h200); FAST=N adds N fast-evaluator episodes at the end, e.g.
#   SET="skillgen.set.rollout.execution_noise_rad=0.04" LABEL=h200_dart04 SO101_SLICE_S=570 \
#     bench/gpu/pipeline_h200.sh out/pipeline_dart04
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR=${1:-out/pipeline_h200}
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
LABEL=${LABEL:-h200}
SETS=()
for item in ${SET:-}; do SETS+=(--set "$item"); done
. bench/gpu/device_env.sh  # carried wheels and GL loaders installed, the environment exported
# the free disk (the device's is 64 GiB; the kept frames are zstd-compressed, ~2 GB for 600 demos at 160x120)
[ "${UNTIL:-}" = install ] && { df -h . | tail -1; echo "pipeline_h200: installed (UNTIL)"; exit 0; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
if [ -n "${UNTIL:-}" ]; then
  status=0
  "$PY" -m so101_cli pipeline run --config config/pipeline_h200.yaml --out "$OUT_DIR" --until "$UNTIL" "${SETS[@]}" || status=$?
  if [ "$status" -eq 75 ]; then echo "slice ended: run again to go on"; exit 0; fi
  [ "$status" -eq 0 ] || exit "$status"
  echo "pipeline_h200: stopped after $UNTIL (UNTIL)"; exit 0
fi
if [ -n "${SO101_SLICE_S:-}" ]; then
  status=0
  "$PY" -m so101_cli pipeline run --config config/pipeline_h200.yaml --out "$OUT_DIR" "${SETS[@]}" || status=$?
  if [ "$status" -eq 75 ]; then echo "slice ended: run again to go on"; exit 0; fi
  [ "$status" -eq 0 ] || exit "$status"
  "$PY" -m so101_cli bench pipeline --config config/pipeline_h200.yaml --out "$OUT_DIR" --keep --label "$LABEL" \
    "${SETS[@]}"
else
  "$PY" -m so101_cli bench pipeline --config config/pipeline_h200.yaml --out "$OUT_DIR" --label "$LABEL" "${SETS[@]}"
fi
if [ -n "${FAST:-}" ]; then  # FAST=N: N more episodes of the trained policy in the fast evaluator (the same scenes'
  # distribution; rows with where each vial was released), beside the graph evaluation's 50
  CKPT=$(ls -d "$OUT_DIR"/train/checkpoints/*/pretrained_model | sort | tail -1)
  PROFILE=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["config"]["dr_profile"])' \
    "$OUT_DIR/eval/results.json")  # the scenes the graph evaluation drew from (the pipeline's dr_profile)
  "$PY" -m so101_cli eval --fast --checkpoint "$CKPT" -n "$FAST" --out "$OUT_DIR/fast" --envs 16 \
    --set dr_profile="$PROFILE"
fi
if [ -n "${OUT:-}" ]; then
  cp "bench/results/pipeline_$LABEL.json" "$OUT/"
  cp "$OUT_DIR"/eval/results.json "$OUT/graph_eval_results.json" 2>/dev/null || true
  cp "$OUT_DIR"/fast/fast_results.json "$OUT_DIR"/fast/fast_episodes.jsonl "$OUT/" 2>/dev/null || true
  cp "$OUT_DIR/summary.json" "$OUT/pipeline_h200_summary.json"
  cp "$OUT_DIR/report/index.html" "$OUT/pipeline_h200_report.html" 2>/dev/null || true
  cp "$OUT_DIR"/eval/*.html "$OUT/" 2>/dev/null || true
fi
