"""A run's bus authentication, made at run start: a password per user, its 0600 file, the
server's accounts block.

    auth = create_run_auth(run_dir / "secrets", run_id, reference_enabled=True)
    EmbeddedNats(run_dir / "nats", auth=auth.server)
    env = {ENV_VAR: str(auth.files["rollout"])}      # what a rollout replica gets

Users: one per service kind (subjects.py) plus `admin` (the launcher). Passwords are new
at every start (a resumed run gets new ones); `remove_run_secrets` deletes the files when
the server stops, since its passwords die with it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from meshrl.transport.bus.authconf import ServerAuth, server_auth
from meshrl.transport.bus.credentials import Credentials, new_password, write_credentials
from meshrl.transport.bus.subjects import ADMIN, admin_permissions, run_permissions


@dataclass(frozen=True)
class RunAuth:
    server: ServerAuth
    files: dict[str, Path]  # user -> credential file (mode 0600)


def create_run_auth(secrets_dir: Path, run_id: str | None, *, reference_enabled: bool = True) -> RunAuth:
    """run_id None (a caller that does not know it yet): the admin user only."""
    users = run_permissions(run_id, reference_enabled=reference_enabled) if run_id else {ADMIN: admin_permissions()}
    passwords = {user: new_password() for user in users}
    files = {user: write_credentials(secrets_dir, Credentials(user, passwords[user])) for user in users}
    return RunAuth(server_auth({user: (users[user], passwords[user]) for user in users}), files)


def remove_run_secrets(secrets_dir: Path) -> None:
    shutil.rmtree(secrets_dir, ignore_errors=True)
