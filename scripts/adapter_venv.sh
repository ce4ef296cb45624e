#!/usr/bin/env bash
# Builds (once) the virtual environment an environment adapter runs in, from its requirements
# list deploy/adapters/NAME.txt, and prints its python. The library's dependencies (verifiers,
# openenv, reasoning-gym, textarena, ...) live there, never in meshrl's own .venv.
# Idempotent: a second run with an unchanged list prints the path at once (a stamp file).
#   bash scripts/adapter_venv.sh verifiers                 # -> .venv-adapters/verifiers/bin/python
#   bash scripts/adapter_venv.sh openenv /opt/venvs/openenv # another destination
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/adapter_venv.sh NAME [DEST]  (NAME: one of $(ls deploy/adapters | sed 's/\.txt$//' | tr '\n' ' '))}
reqs="deploy/adapters/$name.txt"
[ -f "$reqs" ] || { echo "adapter_venv.sh: no $reqs; known adapters: $(ls deploy/adapters | sed 's/\.txt$//' | tr '\n' ' ')" >&2; exit 2; }
dest=${2:-.venv-adapters/$name}
py=${PYTHON:-python3}
stamp="$dest/.adapter-$(sha1sum "$reqs" scripts/adapter_venv.sh | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  echo "[adapter_venv] $name -> $dest" >&2
  [ -x "$dest/bin/python" ] || "$py" -m venv "$dest"
  # torch is never asked for here; an adapter that needs it pins 2.13.0 in its list.
  "$dest/bin/python" -m pip --disable-pip-version-check -q install -r "$reqs" >&2
  rm -f "$dest"/.adapter-*
  touch "$stamp"
fi
echo "$(cd "$dest" && pwd)/bin/python"
