"""Make the NATS users compose.yaml mounts as secrets: deploy/compose/nats-auth/nats-auth.conf
(the server's accounts and users with the passwords, for `nats-server --config`) and one
credential file per service kind, nats-<user>.json, each user allowed exactly its run's
subjects (meshrl.transport.bus.subjects, as for the local launcher). Random passwords,
files 0600 in a 0700 folder (ignored by git); run it again for new passwords, then restart.
It also makes the checkpoint signing key once (deploy/compose/checkpoint-key/: the learner's
private key and the gateway's public one; kept on later runs, since a new key would orphan
every checkpoint the old one signed).

    .venv/bin/python deploy/compose/make_nats_auth.py          # run config and run id of compose.yaml
    sudo chown 10001 deploy/compose/nats-auth/nats-{learner,rollout,reward,reference}.json deploy/compose/checkpoint-key/*
    docker compose -f deploy/compose/compose.yaml up -d

The run id must be the services' MESHRL_RUN_ID (default: $MESHRL_RUN_ID, else the config's
run.name, as in compose.yaml). The meshrl image runs as uid 10001, hence the chown; nats
(root in its image) reads nats-auth.conf as it is. `nats-admin.json` is for an operator's
tools (`MESHRL_NATS_CREDENTIALS_FILE=... meshrl status`); no container gets it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    from meshrl.config import load_config
    from meshrl.inputs.checkpoint.key import KEY_NAME, key_pair
    from meshrl.transport.bus.auth_files import write_auth_files

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=HERE / "run-config.yaml", help="the run config (default: compose's)")
    p.add_argument("--run-id", help="the services' MESHRL_RUN_ID (default: $MESHRL_RUN_ID, else run.name)")
    p.add_argument("--out", type=Path, default=HERE / "nats-auth", help="folder for the files (default: %(default)s)")
    p.add_argument(
        "--checkpoint-key",
        type=Path,
        default=None,
        help="folder of the checkpoint key, made once (default: beside --out)",
    )
    args = p.parse_args(argv)
    cfg = load_config(args.config)
    run_id = args.run_id or os.environ.get("MESHRL_RUN_ID") or cfg.run.name
    files = write_auth_files(args.out, run_id, reference_enabled=cfg.reference_enabled)
    print(f"NATS users for run {run_id!r}: {', '.join(sorted(files.users))}; files in {args.out}")
    key_dir = args.checkpoint_key or args.out.parent / "checkpoint-key"
    private, public = key_pair(key_dir / KEY_NAME)  # made once: a new key orphans checkpoints
    print(f"checkpoint key: {private} (learner), {public} (gateway)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
