"""NATS user credentials: generated at run start, kept in 0600 files, read through an env var.

    creds = credentials_from_env()        # MESHRL_NATS_CREDENTIALS_FILE=/run/x/secrets/nats-rollout.json
    path = write_credentials(secrets_dir, Credentials("rollout", new_password()))

The file holds `{"user": ..., "password": ...}`. Only its path travels (environment, argv
never hold the password); the password never appears in a repr, a log or an error message.
No variable set means no credentials: an external NATS without auth keeps working.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from meshrl.transport.bus.errors import BusError

ENV_VAR = "MESHRL_NATS_CREDENTIALS_FILE"


class CredentialsError(BusError):
    """A credential file is missing, unreadable or malformed (its content is never shown)."""


@dataclass(frozen=True)
class Credentials:
    user: str
    password: str = field(repr=False)


def new_password() -> str:
    # A leading letter: nats-server parses an environment variable as a config value, and a
    # hex string starting with digits could be read as a number.
    return "p" + secrets.token_hex(24)


def credentials_path(secrets_dir: Path, user: str) -> Path:
    return Path(secrets_dir) / f"nats-{user}.json"


def private_dir(path: Path) -> Path:
    """`path` as a directory only its owner can enter (mode 0700)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def write_credentials(secrets_dir: Path, creds: Credentials) -> Path:
    """Write the user's file with mode 0600 from the start (never briefly world-readable)."""
    path = credentials_path(private_dir(secrets_dir), creds.user)
    path.unlink(missing_ok=True)  # a file left by an earlier start keeps its old mode otherwise
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"user": creds.user, "password": creds.password}, f)
    return path


def read_credentials(path: str | Path) -> Credentials:
    try:
        data = json.loads(Path(path).read_text())
        return Credentials(str(data["user"]), str(data["password"]))
    except OSError as err:
        raise CredentialsError(f"cannot read NATS credentials {path} ({ENV_VAR}): {err.strerror}") from None
    except (ValueError, KeyError, TypeError):
        raise CredentialsError(f"NATS credentials {path} ({ENV_VAR}) are not JSON with 'user' and 'password'") from None


def credentials_from_env(environ=None) -> Credentials | None:
    """The credentials MESHRL_NATS_CREDENTIALS_FILE points at, or None when it is unset/empty."""
    path = (os.environ if environ is None else environ).get(ENV_VAR, "")
    return read_credentials(path) if path else None
