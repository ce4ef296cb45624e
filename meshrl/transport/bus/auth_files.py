"""A run's NATS users as files, for a nats-server that meshrl does not start itself (Docker
Compose, Kubernetes): the same users and permissions as the local launcher's (run_auth.py).

    files = write_auth_files(Path("deploy/compose/nats-auth"), "grpo-smollm2", reference_enabled=True)
    files.server           # .../nats-auth.conf: for `nats-server --config` (or an `include`)
    files.users["rollout"] # .../nats-rollout.json: for the rollout's MESHRL_NATS_CREDENTIALS_FILE

The server file defines each password as a config variable and then the accounts block
of authconf.py, which refers to it (`password: $MESHRL_NATS_PASSWORD_ROLLOUT`), so nats-server
needs nothing in its environment. Passwords are new at every call (restart NATS and every
service after regenerating); every file is 0600 in a 0700 folder, and none is printed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from meshrl.private_files import write_private_file
from meshrl.transport.bus.run_auth import create_run_auth

SERVER_FILE = "nats-auth.conf"


@dataclass(frozen=True)
class AuthFiles:
    server: Path
    users: dict[str, Path]  # user -> credential file


def server_config(block: str, passwords: dict[str, str]) -> str:
    """The variables (JSON strings are valid NATS config) followed by the accounts block."""
    head = "# meshrl NATS users (meshrl.transport.bus.auth_files); secret: keep it 0600, never commit it\n"
    variables = "".join(f"{name}: {json.dumps(value)}\n" for name, value in passwords.items())
    return head + variables + block


def write_auth_files(directory: Path, run_id: str, *, reference_enabled: bool = True) -> AuthFiles:
    """nats-auth.conf and nats-<user>.json for each service kind and `admin`, in `directory`."""
    if not run_id:
        raise ValueError("a run id is needed: each user's subjects are the run's (meshrl.<run id>.*)")
    auth = create_run_auth(Path(directory), run_id, reference_enabled=reference_enabled)
    text = server_config(auth.server.config, auth.server.env)
    server = write_private_file(Path(directory) / SERVER_FILE, text.encode())
    return AuthFiles(server, dict(auth.files))
