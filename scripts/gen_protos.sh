#!/usr/bin/env bash
# Generates the Python gRPC stubs (_pb2.py, _pb2_grpc.py, .pyi) from protos/ into meshrl/api/:
# the proto package `meshrl.reward.v1` becomes the module `meshrl.api.reward.v1.reward_pb2`.
# protos/ keeps its layout and package names (services outside the project build from it);
# only where the generated Python lives differs, so the stubs' imports are rewritten.
#   bash scripts/gen_protos.sh           # regenerate
#   bash scripts/gen_protos.sh --check   # fail if the committed stubs drift from protos/
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
gen=$(mktemp -d); trap 'rm -rf "$gen"' EXIT
mapfile -t protos < <(cd protos && find meshrl -name '*.proto' | sort)
"$PY" -m grpc_tools.protoc -Iprotos --python_out="$gen" --pyi_out="$gen" --grpc_python_out="$gen" "${protos[@]}"
out=$gen/api; mkdir -p "$out"
touch "$out/__init__.py"
for proto in "${protos[@]}"; do  # meshrl/<area>/v1/x.proto → api/<area>/v1/, each folder a package
  rel=${proto#meshrl/}; area=${rel%%/*}; dir=$(dirname "$rel")
  mkdir -p "$out/$dir"; touch "$out/$area/__init__.py" "$out/$dir/__init__.py"
  mv "$gen/meshrl/$dir/"*_pb2* "$out/$dir/"
done
find "$out" -name '*_pb2*.py*' -exec sed -i -E 's/\bfrom meshrl\.([a-z_]+)\.v1 import/from meshrl.api.\1.v1 import/' {} +
if [ "${1:-}" != "--check" ]; then
  find meshrl/api -name '*_pb2*.py*' -delete 2>/dev/null || true
  cp -rn "$out/." meshrl/api/  # -n: keeps the packages' docstrings
  exit 0
fi
status=0
for f in $(cd "$out" && find . -name '*_pb2*.py*' | sort); do
  cmp -s "$out/$f" "meshrl/api/$f" || { echo "stale stub: meshrl/api/${f#./} differs from what protos/ generates" >&2; status=1; }
done
for f in $(cd meshrl/api && find . -name '*_pb2*.py*' | sort); do
  [ -f "$out/$f" ] || { echo "stray stub: meshrl/api/${f#./} has no proto" >&2; status=1; }
done
[ $status = 0 ] && echo "proto stubs match protos/" || echo "fix: bash scripts/gen_protos.sh, then commit the stubs" >&2
exit $status
