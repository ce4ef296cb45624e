"""Read a secret (a bearer token) from where the config says it is: an environment variable
or a file, never the config itself. Shared by external reward calls, the alert webhook and
`meshrl reward check`, each naming its own keys in the errors:

    token = read_secret(env_name="JUDGE_TOKEN", file=None,
                        env_label="reward component 'judge': token_env",
                        file_label="reward component 'judge': token_file")

None when neither source is given. The value is stripped and never logged; a missing or
empty source is a ConfigError naming the key and how to fix it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from meshrl.errors import ConfigError


def read_secret(*, env_name: str | None, file: str | None, env_label: str = "token_env",
                file_label: str = "token_file", env: Mapping[str, str] | None = None) -> str | None:
    if env_name is not None:
        value = (os.environ if env is None else env).get(env_name, "").strip()
        if not value:
            raise ConfigError(f"{env_label} names {env_name}, but that environment variable is unset "
                              f"or empty: export it in the service's environment")
        return value
    if file is None:
        return None
    try:
        value = Path(file).expanduser().read_text(encoding="utf-8").strip()
    except OSError as err:
        raise ConfigError(f"{file_label} {file}: cannot read it ({err.strerror}); fix the path, "
                          f"or mount the file there") from None
    if not value:
        raise ConfigError(f"{file_label} {file} is empty: write the token into it")
    return value
