#!/usr/bin/env bash
# deploy/image/install-podman.sh: podman, buildah, runc and mmdebstrap from Debian, set up to
# build and run the meshrl image on this kind of host (root, no systemd, cgroups v1 or hybrid),
# with bridge networks (compose) and pods (kube play).
#
#   sudo bash deploy/image/install-podman.sh        # idempotent; a second run takes a second
#
# What it sets, in /etc/containers/containers.conf.d/50-meshrl.conf (the only file it writes):
# - runtime runc: crun refuses this host's cgroup setup ("cgroups in hybrid mode not supported");
# - default ulimits: nofile = this shell's hard limit, nproc = it capped at 32768: podman's own
#   defaults (1048576) exceed them and every container then fails to start ("error setting
#   rlimit"); here an nproc of 50000 failed too although the shell's hard limit was 96368.
# podman-compose (PyPI) is installed by scripts/setup.sh into the venv, not here.
set -euo pipefail
sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
# iptables: netavark sets up bridge networks (compose's, kube play's) with it, and fails
# with "No such file or directory" without it; catatonit: the pause process of a pod's infra
# container (podman kube play).
packages="podman buildah runc mmdebstrap netavark aardvark-dns uidmap iptables catatonit"
missing=$(for p in $packages; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"; done)
if [ -n "$missing" ]; then
  echo "[install-podman] apt-get install $(echo $missing)"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
fi
conf=/etc/containers/containers.conf.d/50-meshrl.conf
nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
[ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
want=$(printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n[engine]\nruntime = "runc"\n' \
  "$nofile" "$nofile" "$nproc" "$nproc")
if [ "$(cat "$conf" 2>/dev/null)" != "$want" ]; then
  $sudo mkdir -p "$(dirname "$conf")"
  echo "$want" | $sudo tee "$conf" >/dev/null
  echo "[install-podman] wrote $conf (runc; ulimits nofile $nofile, nproc $nproc)"
fi
