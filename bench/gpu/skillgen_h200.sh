#!/bin/bash
# SkillGen and IK figures of the H200 machine, as one command: `so101 bench ik --device cuda` (the batched
# 1024 x 32 case on the GPU, the fused Triton kernel when triton imports) and `so101 bench skillgen` on all the
# machine's cores: 1,200 kept single-vial demos under the wide DR profile, plus the cases chosen by CASES
# (default: the multi-vial variant under both profiles, clean seeds). Each result is copied to $OUT (the device
# tool's output folder) as soon as it exists.
# Results: bench/results/ik_h200.json, bench/results/skillgen_h200.json (the 1,200), skillgen_h200_cases.json
# (the wheels to carry: bench/README.md).
#
# Usage, from the repository root on the GPU machine, with the venv (or the wheels) in place:
#   bench/gpu/skillgen_h200.sh [--no-ik]            # CASES=none: only the IK and the 1,200-demo runs
#   LARGE_PROFILE=default bench/gpu/skillgen_h200.sh --no-ik   # the 1,200 under the SPEC (default) ranges
#   CASES="--variants single_vial,multi_vial --profiles default,wide --noise 0,5,10" bench/gpu/skillgen_h200.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export SO101_MACHINE=${SO101_MACHINE:-device machine}  # the result files' machine.host
export PYTHONPATH=${PYTHONPATH:-$(ls -d "$PWD"/src/*/ | paste -sd:)}
WORKERS=${WORKERS:-$(nproc)}
CASES=${CASES:---variants multi_vial --profiles default,wide --noise 0}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
if [ "${1:-}" != "--no-ik" ]; then
  "$PY" -m so101_cli bench ik --device cuda --label h200
  if [ -n "${OUT:-}" ]; then cp bench/results/ik_h200.json "$OUT/"; fi
fi
"$PY" -m so101_cli bench skillgen --seeds 5 --workers "$WORKERS" --no-cases --large 1200 \
  --large-profile "${LARGE_PROFILE:-wide}" --label h200
if [ -n "${OUT:-}" ]; then cp bench/results/skillgen_h200.json "$OUT/"; fi
[ "$CASES" = none ] && exit 0
# shellcheck disable=SC2086
"$PY" -m so101_cli bench skillgen --seeds 5 --demos 40 --workers "$WORKERS" $CASES --label h200_cases
if [ -n "${OUT:-}" ]; then cp bench/results/skillgen_h200_cases.json "$OUT/"; fi
