#!/bin/bash
# The full-size pipeline (config/pipeline_h200.yaml) on one H200 machine, as one command: seeds, SkillGen,
# rendering (EGL, 16 processes), ACT training and 50 evaluation episodes on CUDA, then the report. Its figures
# go to bench/results/pipeline_h200.json (and $OUT/ when run through the device tool).
#
# Usage, from the repository root on the GPU machine, with the venv (or the wheels) in place:
#   bench/gpu/pipeline_h200.sh [OUT_DIR]          # default out/pipeline_h200
# With a per-command time limit shorter than the run (the device tool's is 10 minutes), set
#   SO101_SLICE_S=570 bench/gpu/pipeline_h200.sh  # stops after ~570 s; run it again on the same machine to resume
# Every stage resumes after a kill, so repeated slices finish the pipeline; the wall times of the slices add up
# (the summary's per-stage `produced_wall_s` is what each stage took in the invocation that finished it).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR=${1:-out/pipeline_h200}
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
export SO101_MACHINE=${SO101_MACHINE:-device machine (nvidia-h200)}  # the result files' machine.host
export PYTHONPATH=${PYTHONPATH:-$(ls -d "$PWD"/src/*/ | paste -sd:)}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
if [ -n "${SO101_SLICE_S:-}" ]; then
  status=0
  timeout --signal=KILL "$SO101_SLICE_S" "$PY" -m so101_cli pipeline run --config config/pipeline_h200.yaml \
    --out "$OUT_DIR" || status=$?
  if [ "$status" -eq 137 ]; then echo "slice ended after ${SO101_SLICE_S} s: run again to resume"; exit 0; fi
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
