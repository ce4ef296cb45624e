#!/usr/bin/env bash
# Sets everything up from nothing (scripts/setup.sh), checks the generated stubs and lint (ruff),
# then runs the whole test suite:
#   bash scripts/test.sh            # all tests
#   bash scripts/test.sh -m "not slow"   # skip the ones that start vLLM or a whole mesh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/test_tools.sh
export PATH="$PWD/.venv/bin:$PATH"
bash scripts/gen_protos.sh --check
.venv/bin/ruff check .            # lint ([tool.ruff] in pyproject.toml)
.venv/bin/ruff format --check .   # format ([tool.ruff.format])
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
