#!/usr/bin/env bash
# Generates the Python gRPC stubs (_pb2.py, _pb2_grpc.py, .pyi) from protos/ into meshrl/,
# so `meshrl.common.v1.common_pb2` mirrors the proto package `meshrl.common.v1`.
#   bash scripts/gen_protos.sh           # regenerate
#   bash scripts/gen_protos.sh --check   # fail if the committed stubs drift from protos/
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
out=.
if [ "${1:-}" = "--check" ]; then out=$(mktemp -d); trap 'rm -rf "$out"' EXIT; fi
mapfile -t protos < <(cd protos && find meshrl -name '*.proto' | sort)
"$PY" -m grpc_tools.protoc -Iprotos --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" "${protos[@]}"
for proto in "${protos[@]}"; do  # make each generated folder a package
  dir=$(dirname "$proto"); while [ "$dir" != "meshrl" ]; do touch "$out/$dir/__init__.py"; dir=$(dirname "$dir"); done
done
[ "${1:-}" = "--check" ] || exit 0
status=0
for f in $(cd "$out" && find meshrl -name '*_pb2*.py*' | sort); do
  cmp -s "$out/$f" "$f" || { echo "stale stub: $f differs from what protos/ generates" >&2; status=1; }
done
for f in $(find meshrl -name '*_pb2*.py*' | sort); do
  [ -f "$out/$f" ] || { echo "stray stub: $f has no proto" >&2; status=1; }
done
[ $status = 0 ] && echo "proto stubs match protos/" || echo "fix: bash scripts/gen_protos.sh, then commit the stubs" >&2
exit $status
