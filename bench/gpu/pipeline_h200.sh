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
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR=${1:-out/pipeline_h200}
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
. bench/gpu/device_env.sh  # carried wheels and GL loaders installed, the environment exported
[ "${UNTIL:-}" = install ] && { echo "pipeline_h200: installed (UNTIL)"; exit 0; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
if [ -n "${UNTIL:-}" ]; then
  status=0
  "$PY" -m so101_cli pipeline run --config config/pipeline_h200.yaml --out "$OUT_DIR" --until "$UNTIL" || status=$?
  if [ "$status" -eq 75 ]; then echo "slice ended: run again to go on"; exit 0; fi
  [ "$status" -eq 0 ] || exit "$status"
  echo "pipeline_h200: stopped after $UNTIL (UNTIL)"; exit 0
fi
if [ -n "${SO101_SLICE_S:-}" ]; then
  status=0
  "$PY" -m so101_cli pipeline run --config config/pipeline_h200.yaml --out "$OUT_DIR" || status=$?
  if [ "$status" -eq 75 ]; then echo "slice ended: run again to go on"; exit 0; fi
  [ "$status" -eq 0 ] || exit "$status"
  "$PY" -m so101_cli bench pipeline --config config/pipeline_h200.yaml --out "$OUT_DIR" --keep --label h200
else
  "$PY" -m so101_cli bench pipeline --config config/pipeline_h200.yaml --out "$OUT_DIR" --label h200
fi
if [ -n "${OUT:-}" ]; then
  cp bench/results/pipeline_h200.json "$OUT/"
  cp "$OUT_DIR/summary.json" "$OUT/pipeline_h200_summary.json"
  cp "$OUT_DIR/report/index.html" "$OUT/pipeline_h200_report.html" 2>/dev/null || true
  cp "$OUT_DIR"/eval/*.html "$OUT/" 2>/dev/null || true
fi
