#!/usr/bin/env bash
# GR00T N1.6-3B fine-tuning on an so101 LeRobot v2.1 export (so101 dataset build → lerobot_v21/ with
# meta/modality.json). Run from an Isaac-GR00T checkout (Python 3.10 env with gr00t installed):
#   bash finetune_n16.sh DATASET_DIR OUTPUT_DIR [NUM_GPUS]
# Recipe (SPEC step 5, config/gr00t_finetune.yaml): LLM and vision tower frozen, projector + diffusion head
# trained, paged_adamw_8bit, batch 32 x 2 accumulation, lr 1e-4 cosine with 5 % warm-up, 20k steps, horizon 16.
# NOT RUN HERE: GR00T is not installable on this project's machines. Flag names follow Isaac-GR00T's N1.6
# examples (launch_finetune.py); the freeze and optimizer flags are UNCONFIRMED for your checkout: check
# `python gr00t/experiment/launch_finetune.py --help` and drop any it rejects (N1.6's defaults already freeze
# the LLM and the vision tower).
set -euo pipefail
DATASET=${1:?dataset dir (lerobot_v21)}
OUT=${2:?output dir}
NUM_GPUS=${3:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
test -f "$DATASET/meta/modality.json" || { echo "no meta/modality.json in $DATASET (use the v2.1 export)" >&2; exit 2; }
torchrun --nproc_per_node="$NUM_GPUS" gr00t/experiment/launch_finetune.py \
  --base_model_path nvidia/GR00T-N1.6-3B \
  --dataset_path "$DATASET" \
  --modality_config_path "$HERE/so101_modality_config.py" \
  --embodiment_tag NEW_EMBODIMENT \
  --num_gpus "$NUM_GPUS" \
  --output_dir "$OUT" \
  --max_steps 20000 \
  --save_steps 2000 \
  --save_total_limit 5 \
  --global_batch_size 32 \
  --gradient_accumulation_steps 2 \
  --learning_rate 1e-4 \
  --lr_scheduler_type cosine \
  --warmup_ratio 0.05 \
  --weight_decay 1e-5 \
  --optim paged_adamw_8bit \
  --no-tune-llm --no-tune-visual --tune-projector --tune-diffusion-model \
  --dataloader_num_workers 8
# Serve it: python gr00t/eval/run_gr00t_server.py --model-path "$OUT" --embodiment-tag NEW_EMBODIMENT --port 5555
# and run the so101 policy node against it (so101 launch policy server_port:=5555): same N1.6 protocol.
