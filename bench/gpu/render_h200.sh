#!/bin/bash
# `so101 bench render` on one H200 machine (EGL, 16 cores) as one command: the stock mujoco.Renderer ceiling,
# the tiled pass with each readback (sync = mjr_readPixels, pbo = async RGB pixel-pack buffers, pbo_bgra =
# async BGRA + one OpenCV pass) at 1 and 16 processes, and into LeRobot v3.0 (libx264 ultrafast, 1 thread per
# camera stream; veryfast, config/dataset.yaml's preset, once). Its figures go to bench/results/render_h200.json
# (to $OUT/ instead when run through the device tool).
#
# Usage, from the repository root on the GPU machine (sources on PYTHONPATH, no pip install of our packages):
#   bench/gpu/render_h200.sh                    # ~4-5 min; PHASES=... overrides the phase list
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export MUJOCO_GL=egl PYOPENGL_PLATFORM=egl HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
export PYTHONPATH=${PYTHONPATH:-$(ls -d "$PWD"/src/*/ | paste -sd:)}
export NODEGRAPH_INTERFACE_PATH=${NODEGRAPH_INTERFACE_PATH:-$PWD/src/so101_msgs}
[ -n "${OUT:-}" ] && export SO101_BENCH_RESULTS=$OUT
PHASES=${PHASES:-stock:16,tiled:1:8:sync,tiled:1:8:pbo,tiled:1:8:pbo_bgra,tiled:16:8:sync,tiled:16:8:pbo,\
tiled:16:8:pbo_bgra,tiled:8:16:pbo,dataset:16:8:ultrafast:sync:s=12,dataset:16:8:ultrafast:pbo:s=12,\
dataset:16:8:ultrafast:pbo_bgra:s=12,dataset:8:8:ultrafast:pbo:s=12,dataset:16:8:veryfast:pbo:s=12}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PY" -m so101_cli bench render --phases "$PHASES" --seconds 6 --frames 150 --encoder-threads 1 --label h200 --json
