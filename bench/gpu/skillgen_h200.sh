#!/bin/bash
# SkillGen and IK figures of the H200 machine, as one command: `so101 bench ik --device cuda` (the batched
# 1024 x 32 case on the GPU, the fused Triton kernel when triton imports) and `so101 bench skillgen` with every
# case on all the machine's cores plus 1,200 kept single-vial demos under the wide DR profile.
# Results: bench/results/ik_h200.json, bench/results/skillgen_h200.json (and $OUT/ through the device tool).
#
# Usage, from the repository root on the GPU machine, with the venv (or the wheels) in place:
#   bench/gpu/skillgen_h200.sh [--no-ik] [extra `bench skillgen` options, e.g. --no-cases]
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export PYTHONPATH=${PYTHONPATH:-$(ls -d "$PWD"/src/*/ | paste -sd:)}
WORKERS=${WORKERS:-$(nproc)}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
if [ "${1:-}" = "--no-ik" ]; then shift; else
  "$PY" -m so101_cli bench ik --device cuda --label h200
fi
"$PY" -m so101_cli bench skillgen --seeds 5 --demos 40 --workers "$WORKERS" --large 1200 --large-profile wide \
  --label h200 "$@"
if [ -n "${OUT:-}" ]; then cp bench/results/ik_h200.json bench/results/skillgen_h200.json "$OUT/" 2>/dev/null || true; fi
