"""Make the NATS users compose.yaml mounts as secrets: deploy/compose/nats-auth/nats-auth.conf
(the server's accounts and users with the passwords, for `nats-server --config`) and one
credential file per service kind, nats-<user>.json, each user allowed exactly its run's
subjects (meshrl.transport.bus.subjects, as for the local launcher). Random passwords,
files 0600 in a 0700 folder (ignored by git); run it again for new passwords, then restart.
It also makes the checkpoint signing key once (deploy/compose/checkpoint-key/: the learner's
private key and the gateway's public one; kept on later runs, since a new key would orphan
every checkpoint the old one signed) and, when there is none, the gateway's tokens file
(deploy/compose/gateway-tokens.yaml: one admin token, random; add your own entries to it).

    sudo .venv/bin/python deploy/compose/make_nats_auth.py     # run config and run id of compose.yaml
    docker compose -f deploy/compose/compose.yaml up -d

The run id must be the services' MESHRL_RUN_ID (default: $MESHRL_RUN_ID, else the config's
run.name, as in compose.yaml). The meshrl image runs as uid 10001 (--owner): run as root, the
script hands every file a container reads (each service kind's credentials, nats-auth.conf,
both checkpoint keys) to that uid, still 0600, so the learner can sign its checkpoints; run as
another user it prints the one chown to do (`podman unshare chown` for rootless podman).
`nats-admin.json` is for an operator's tools (`MESHRL_NATS_CREDENTIALS_FILE=... meshrl
status`); no container gets it, and it stays the caller's.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
IMAGE_UID = 10001  # deploy/image/Dockerfile's USER


def main(argv: list[str] | None = None) -> int:
    from meshrl.config import load_config
    from meshrl.inputs.checkpoint.key import KEY_NAME, key_pair
    from meshrl.transport.bus.auth_files import write_auth_files
    from meshrl.transport.bus.subjects import ADMIN  # the operator's user: no container reads it

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
    p.add_argument("--owner", type=int, default=IMAGE_UID, help="uid the containers run as (default: %(default)s)")
    args = p.parse_args(argv)
    cfg = load_config(args.config)
    run_id = args.run_id or os.environ.get("MESHRL_RUN_ID") or cfg.run.name
    files = write_auth_files(args.out, run_id, reference_enabled=cfg.reference_enabled)
    print(f"NATS users for run {run_id!r}: {', '.join(sorted(files.users))}; files in {args.out}")
    key_dir = args.checkpoint_key or args.out.parent / "checkpoint-key"
    private, public = key_pair(key_dir / KEY_NAME)  # made once: a new key orphans checkpoints
    print(f"checkpoint key: {private} (learner), {public} (gateway)")
    tokens = gateway_tokens(args.out.parent / "gateway-tokens.yaml")
    others = [path for user, path in sorted(files.users.items()) if user != ADMIN]
    hand_over([files.server, *others, private, public, tokens], args.owner)
    return 0


def gateway_tokens(path: Path) -> Path:
    """The gateway's tokens file: kept when there is one, else one random admin token (0600)."""
    if not path.exists():
        text = f"tokens:\n  - {{name: admin, role: admin, token: {secrets.token_urlsafe(32)}}}\n"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        print(f"gateway tokens: {path} (one admin token, made now: read it there)")
    return path


def hand_over(paths: list[Path], uid: int) -> None:
    """Give the files the containers read to the image's uid (root only); otherwise say how."""
    if os.geteuid() == 0:
        for path in paths:
            os.chown(path, uid, uid)
        print(f"owner: uid {uid} (the image's user), mode 0600")
    elif any(path.stat().st_uid != uid for path in paths):
        names = " ".join(str(path) for path in paths)
        print(
            f"the containers run as uid {uid} and cannot read these files yet: run this script as root, "
            f"or `sudo chown {uid} {names}` (rootless podman: `podman unshare chown {uid} ...`)",
            file=sys.stderr,
        )


if __name__ == "__main__":
    sys.exit(main())
