#!/bin/sh
# deploy/image/entrypoint.sh: the meshrl image's entrypoint; starts one service from env vars.
#
#   entrypoint.sh SERVICE [the service's own flags...]    e.g.  entrypoint.sh rollout --grpc-port 50051
#   MESHRL_SERVICE=reward entrypoint.sh                   (the service from the environment)
#   entrypoint.sh meshrl doctor                           (any other command runs as given)
#   entrypoint.sh --help                                  (this text and the services, exit 0)
#
# runs   meshrl serve SERVICE --nats "$MESHRL_NATS_URL" --run-id "$MESHRL_RUN_ID" \
#            --config "$MESHRL_CONFIG" --replica-id "$MESHRL_REPLICA_ID" [flags...]
# MESHRL_REPLICA_ID defaults to the hostname (the pod or container name);
# MESHRL_CONFIG_OVERRIDES ("learner.steps=2 ...") changes the config without editing it. A missing
# variable is named on stderr, exit 2, before anything starts.
# MESHRL_TORCHRUN_ARGS (learner only, e.g. "--nnodes=2 --nproc-per-node=8 --node-rank=0
# --master-addr=learner-0.learner --master-port=29500"): the learner runs under torchrun,
# each rank as `python -m meshrl.cli.main serve learner ...`.
# exec: the service is PID 1's replacement, so SIGTERM from docker/kubelet reaches it.
# Tested on the host with a fake `meshrl`: tests/deploy/test_entrypoint.py.
set -eu

SERVICES="rollout reward reward_model environment reference learner"

is_service() {
  for known in $SERVICES; do [ "$1" = "$known" ] && return 0; done
  return 1
}

if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then  # the usage above, then exit 0
  awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
  echo "services: $SERVICES"
  exit 0
fi
if [ "$#" -gt 0 ] && ! is_service "$1"; then
  # A mistyped service name ("rolout") is no command either: name the services, not "not found".
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "meshrl entrypoint: '$1' is no service and no command: services are $SERVICES (or give a command to run)" >&2
    exit 2
  fi
  exec "$@"
fi
if [ "$#" -gt 0 ]; then
  service=$1
  shift
else
  service=${MESHRL_SERVICE:-}
fi

missing=""
need() {  # need NAME WHAT: remember NAME when it is unset or empty
  eval "value=\${$1:-}"
  if [ -z "$value" ]; then
    echo "meshrl entrypoint: $1 is not set: $2" >&2
    missing="$missing $1"
  fi
}
if [ -z "$service" ]; then
  echo "meshrl entrypoint: no service: pass one of ($SERVICES) as the command, or set MESHRL_SERVICE" >&2
  exit 2
fi
if ! is_service "$service"; then
  echo "meshrl entrypoint: unknown service '$service': one of $SERVICES" >&2
  exit 2
fi
need MESHRL_NATS_URL "the NATS url, e.g. nats://nats:4222"
need MESHRL_RUN_ID "the run's id, e.g. grpo-smollm2"
need MESHRL_CONFIG "the path of the run's config YAML, e.g. /etc/meshrl/config.yaml"
if [ -n "$missing" ]; then
  echo "meshrl entrypoint: cannot start $service: missing$missing" >&2
  exit 2
fi
replica=${MESHRL_REPLICA_ID:-${HOSTNAME:-$(hostname)}}

# MESHRL_CONFIG_OVERRIDES="learner.steps=2 rollout.sampling.group_size=4": `a.b=c` overrides of
# the mounted (read-only) config, as `meshrl train` takes them; the config they make is written
# to /tmp and served instead, so a short run needs no edit of the file every service shares.
if [ -n "${MESHRL_CONFIG_OVERRIDES:-}" ]; then
  # shellcheck disable=SC2086  # one override per word is intended
  python3 -c '
import sys
from meshrl.config.load import dump_config, load_config
from meshrl.errors import ConfigError
try:
    text = dump_config(load_config(sys.argv[1], sys.argv[3:]))
except ConfigError as err:
    sys.exit(f"meshrl entrypoint: MESHRL_CONFIG_OVERRIDES: {err}")
open(sys.argv[2], "w").write(text)
' "$MESHRL_CONFIG" "${TMPDIR:-/tmp}/meshrl-config.yaml" $MESHRL_CONFIG_OVERRIDES || exit 2
  MESHRL_CONFIG=${TMPDIR:-/tmp}/meshrl-config.yaml
fi

set -- serve "$service" --nats "$MESHRL_NATS_URL" --run-id "$MESHRL_RUN_ID" \
  --config "$MESHRL_CONFIG" --replica-id "$replica" "$@"
if [ "$service" = learner ] && [ -n "${MESHRL_TORCHRUN_ARGS:-}" ]; then
  # shellcheck disable=SC2086  # word splitting of the torchrun flags is intended
  exec torchrun $MESHRL_TORCHRUN_ARGS -m meshrl.cli.main "$@"
fi
exec meshrl "$@"
