#!/bin/bash
# Serving-side figures of issue 23 that need no trained policy (latency and throughput do not depend on the
# weights), on one GPU machine, as product commands:
#   1. `so101 bench policy --full-resolution --transport`: get_action p50/p99 through a real ZMQ socket at
#      3 x 640x480 for each CUDA variant (bench_policy.CUDA_VARIANTS: fp32, bf16, fp32 and
#      bf16 from CUDA graphs, each with its chunk's max difference from eager fp32), cold start, the wire alone
#      (a server answering a fixed chunk) and the policy node's 30 Hz loop jitter → $SO101_BENCH_RESULTS/policy_<LABEL>.json;
#   2. `so101 eval --fast` of an untrained ACT at 3 x 160x120 (train.yaml's architecture), wide DR: every episode
#      runs its full 20 s, so episodes/min is the evaluator's worst case; once per execution in VARIANTS
#      ("horizon alpha replan;...": a new chunk every 8 steps, and every step) → fast_untrained_r<replan>.json.
# Carried wheels as for policy_h200.sh (.whl in a first call with UNTIL=install, then .whl_b; bench/README.md).
# UNTIL=bench stops after step 1.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
. bench/gpu/device_env.sh
[ "${UNTIL:-}" = install ] && { echo "serving_h200: installed (UNTIL)"; exit 0; }
OUT_DIR=${OUT:-bench/results}
export SO101_BENCH_RESULTS=$OUT_DIR
LABEL=${LABEL:-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200 && echo h200 || echo h100)}
EPISODES=${EPISODES:-64}
so101() { "$PY" -m so101_cli "$@"; }
echo "== bench policy ($LABEL)"
so101 bench policy --full-resolution --transport --device cuda --calls 200 --jitter-seconds 8 --label "$LABEL"
[ "${UNTIL:-}" = bench ] && { echo "serving_h200: stopped after bench policy (UNTIL)"; exit 0; }
CKPT=$("$PY" - /tmp/untrained_act <<'PYEOF' | tail -1
import sys
from pathlib import Path
import numpy as np
from so101_core.lerobot_units import to_lerobot
from so101_core.sim.config import load_sim_config
from so101_policy.bench_policy import synthetic_checkpoint
home = to_lerobot(np.asarray(load_sim_config().robot.home))  # small moves about home, admitted: full-length episodes
print(synthetic_checkpoint(Path(sys.argv[1]), 160, 120, centre=home))
PYEOF
)
IFS=";" read -r -a VARIANT_LIST <<<"${VARIANTS:-16 0.2 8;16 0.1 1}"
for variant in "${VARIANT_LIST[@]}"; do
  read -r H A R <<<"$variant"
  echo "== fast evaluation, untrained ACT, horizon $H alpha $A replan $R"
  so101 eval --fast --checkpoint "$CKPT" -n "$EPISODES" --envs "$(nproc)" --out "/tmp/fast_untrained_r$R" \
    --set dr_profile=wide --set horizon="$H" --set blend_alpha="$A" --set replan_steps="$R" --set device=cuda
  cp "/tmp/fast_untrained_r$R/fast_results.json" "$OUT_DIR/fast_untrained_r$R.json"
done
echo "serving_h200: done"
