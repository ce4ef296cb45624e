#!/usr/bin/env bash
# Installs the tools only the tests use, so a user who only trains never gets them:
# promtool (Debian package prometheus) checks metric names and alert rules; Chromium and its
# driver run the dashboard's browser tests; podman, buildah, runc and mmdebstrap build and run
# the image tests' containers (as root only, as CI is). Each is skipped when already there.
#   bash scripts/test_tools.sh        # scripts/test.sh runs it after scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# `apt-get update` runs at most once, only when something is missing.
apt_updated=0
apt_install() {
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  [ "$apt_updated" = 1 ] || { $sudo apt-get update -qq; apt_updated=1; }
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >/dev/null
}
command -v promtool >/dev/null || { echo "[test_tools] promtool (Debian package prometheus)"; apt_install prometheus; }
# The gateway dashboard's browser tests drive headless Chromium through its chromedriver (selenium).
command -v chromium >/dev/null && command -v chromedriver >/dev/null || { echo "[test_tools] chromium and chromium-driver"; apt_install chromium chromium-driver; }
# The image tests (tests/deploy/test_image_*.py, test_compose_up.py) build and run containers:
# podman, buildah, runc and mmdebstrap from Debian, set up for this host. As root only (CI is).
[ "$(id -u)" != 0 ] || bash deploy/image/install-podman.sh
