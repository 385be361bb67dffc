#!/bin/bash
# ACT training throughput on one H200 machine, without a dataset: `so101 bench train --synthetic` (random
# frames already in GPU memory, train.yaml's model, bf16 autocast) for each batch size and backbone norm.
# Result: bench/results/train_h200.json (and $OUT/ when run through the device tool).
#
# Usage, from the repository root on the GPU machine, with the venv (or the wheels) in place:
#   bench/gpu/train_h200.sh [BATCH_SIZES] [NORMS] [SECONDS]      # default 64,256,512 frozen,batch 15
# Wheels carried in .whl/ (see bench/README.md) are installed first into /tmp/site when present.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
if compgen -G ".whl/*.whl" >/dev/null && [ ! -d /tmp/site/lerobot ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
export PYTHONPATH=$(ls -d "$PWD"/src/*/ | paste -sd:):${PYTHONPATH:-}
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
export SO101_MACHINE=${SO101_MACHINE:-device machine}
[ -n "${OUT:-}" ] && export SO101_BENCH_RESULTS=$OUT  # the result file comes back from the device tool
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PY" - "${1:-64,256,512}" "${2:-frozen,batch}" "${3:-15}" <<'PYEOF'
import dataclasses, json, sys
from so101_policy.bench_train import synthetic_sweep
from so101_policy.config import load_train_config
from so101_cli.benchmarks.results import write_result
sizes, norms, seconds = [int(b) for b in sys.argv[1].split(",")], sys.argv[2].split(","), float(sys.argv[3])
cfg = dataclasses.replace(load_train_config(), device="cuda", use_amp=True)
result = synthetic_sweep(cfg, sizes, norms, 3, 120, 160, seconds)
result["command"] = f"bench/gpu/train_h200.sh {sys.argv[1]} {sys.argv[2]} {sys.argv[3]}"
print("recorded in", write_result("train_h200", result))
print(json.dumps(result["best"], indent=2))
PYEOF
