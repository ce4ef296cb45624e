#!/usr/bin/env bash
# deploy/image/make-base.sh: the local base image for deploy/image/Dockerfile, made from Debian
# packages where no public registry is reachable (ARG BASE; the ordinary world uses the public
# python:3.11-slim-bookworm instead). mmdebstrap builds a minimal bookworm root with Python 3.11,
# `podman import` turns it into an image. An imported image has no PATH: --change sets one.
#
#   bash deploy/image/make-base.sh                      # -> localhost/meshrl-base:bookworm
#   bash deploy/image/make-base.sh --tag NAME --force   # remake it (discards the build cache above it)
#
# Keeps an existing image unless --force: re-importing a new tarball gives a new image id and
# so throws away every cached layer built on top of it. Needs root, mmdebstrap and podman
# (deploy/image/install-podman.sh installs both).
set -euo pipefail
TAG=localhost/meshrl-base:bookworm
FORCE=0
SUITE=bookworm
while [ "$#" -gt 0 ]; do
  case "$1" in
    --tag) TAG=$2; shift 2 ;;
    --force) FORCE=1; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "make-base.sh: unknown option '$1' (--tag NAME, --force)" >&2; exit 2 ;;
  esac
done
if [ "$FORCE" = 0 ] && podman image exists "$TAG"; then
  echo "[make-base] $TAG exists (keep it: it holds the build cache; --force remakes it)"
  exit 0
fi
for tool in mmdebstrap podman; do
  command -v "$tool" >/dev/null || { echo "make-base.sh: $tool is missing: run deploy/image/install-podman.sh" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# What python:3.11-slim gives a Dockerfile: Python with venv, CA certificates, bash, useradd.
# Docs, man pages and locales are left out (as in the slim images); apt's lists are emptied.
mmdebstrap --variant=minbase --include=python3,python3-venv,ca-certificates,passwd \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
  --format=tar "$SUITE" "$work/base.tar"
podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  "$work/base.tar" "$TAG" >/dev/null
echo "[make-base] $TAG: $(podman image inspect --format '{{.Size}}' "$TAG" | numfmt --to=iec) ($SUITE, $(podman run --rm --network none "$TAG" python3 --version))"
