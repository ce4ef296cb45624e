"""Read a secret (a bearer token) from where the config says it is: an environment variable
or a file, never the config itself. Shared by external reward calls, the alert webhook and
`meshrl reward check`, each naming its own keys in the errors:

    token = read_secret(env_name="JUDGE_TOKEN", file=None,
                        env_label="reward component 'judge': token_env",
                        file_label="reward component 'judge': token_file")

None when neither source is given. The value is stripped and never logged; a missing or
empty source is a ConfigError naming the key and how to fix it.

The config's own checks that keep a secret out of it (its values are printed by --dry-run,
saved in RUN_DIR/config.yaml and passed on command lines), used by the schema's validators;
neither message repeats the value:

    check_env_name(name, "reward component 'judge': token_env")   # a pasted token is refused
    check_no_credentials(url, "nats.url")                          # nats://user:pass@host is refused
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit

from meshrl.errors import ConfigError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def check_env_name(name: str | None, key: str) -> str | None:
    """`name` when it can be an environment variable's name; ValueError (without the value: it
    may be the token itself, pasted in the wrong place) otherwise."""
    if name is not None and not ENV_NAME.match(name):
        raise ValueError(
            f"{key} is the NAME of an environment variable (letters, digits, _; it holds "
            f"{len(name)} characters that are not one), never the token itself: put the token "
            "in an environment variable (or a file: token_file) and name that here"
        )
    return name


def check_no_credentials(url: str | None, key: str) -> str | None:
    """`url` (or a comma-separated list of them) when none holds user:password@; ValueError
    naming the key, never the password."""
    for part in (url or "").split(","):
        parts = urlsplit(part.strip()) if "://" in part else None
        if parts is not None and (parts.username or parts.password):
            raise ValueError(
                f"{key} must not hold credentials (user:password@): they would show in "
                "command lines, --dry-run and RUN_DIR/config.yaml; give them in a file instead "
                "(MESHRL_NATS_CREDENTIALS_FILE for NATS, token_env / token_file elsewhere)"
            )
    return url


def read_secret(
    *,
    env_name: str | None,
    file: str | None,
    env_label: str = "token_env",
    file_label: str = "token_file",
    env: Mapping[str, str] | None = None,
) -> str | None:
    if env_name is not None:
        value = (os.environ if env is None else env).get(env_name, "").strip()
        if not value:
            raise ConfigError(
                f"{env_label} names {env_name}, but that environment variable is unset "
                f"or empty: export it in the service's environment"
            )
        return value
    if file is None:
        return None
    try:
        value = Path(file).expanduser().read_text(encoding="utf-8").strip()
    except OSError as err:
        raise ConfigError(
            f"{file_label} {file}: cannot read it ({err.strerror}); fix the path, or mount the file there"
        ) from None
    if not value:
        raise ConfigError(f"{file_label} {file} is empty: write the token into it")
    return value
