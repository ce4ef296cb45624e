"""The nats-server `authorization { users = [...] }` block for a run, without its passwords.

    auth = server_auth({"rollout": (perms, password), ...})
    EmbeddedNats(store_dir, auth=auth)   # auth.config goes in the .conf, auth.env in its environment

Each password appears in the config only as a variable (`password: $MESHRL_NATS_PASSWORD_ROLLOUT`),
which nats-server resolves from its own environment: the .conf in the run dir holds no
secret, and the server's environment is readable only by the same user (as are the 0600
credential files the clients read). Permissions use allow lists: anything not allowed is
refused with a "Permissions Violation" error (deny is the default once `allow` is given).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from meshrl.transport.bus.subjects import Permissions

AUTH_TIMEOUT_S = 5


@dataclass(frozen=True)
class ServerAuth:
    config: str  # the authorization block, variables in place of passwords
    env: dict[str, str] = field(repr=False)  # variable -> password, for the server's environment


def password_variable(user: str) -> str:
    token = "".join(c if c.isalnum() else "_" for c in user).upper()
    return f"MESHRL_NATS_PASSWORD_{token}"


def _user_entry(user: str, perms: Permissions) -> str:
    # JSON lists are valid NATS config; the password stays an unquoted $VARIABLE reference.
    return (
        f"    {{user: {json.dumps(user)}, password: ${password_variable(user)}, permissions: {{\n"
        f"      publish: {{allow: {json.dumps(list(perms.publish))}}}\n"
        f"      subscribe: {{allow: {json.dumps(list(perms.subscribe))}}}\n"
        "    }}"
    )


def server_auth(users: dict[str, tuple[Permissions, str]]) -> ServerAuth:
    """users: name -> (permissions, password)."""
    if not users:
        raise ValueError("no NATS users: an authorization block needs at least one")
    entries = "\n".join(_user_entry(user, perms) for user, (perms, _) in users.items())
    config = f"authorization {{\n  timeout: {AUTH_TIMEOUT_S}\n  users = [\n{entries}\n  ]\n}}\n"
    return ServerAuth(config, {password_variable(user): password for user, (_, password) in users.items()})
