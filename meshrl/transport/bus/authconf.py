"""The nats-server `accounts { ... }` block for a run's users, without their passwords.

    auth = server_auth({"rollout": (perms, password), ...})
    EmbeddedNats(store_dir, auth=auth)   # auth.config goes in the .conf, auth.env in its environment

Each password appears in the config only as a variable (`password: $MESHRL_NATS_PASSWORD_ROLLOUT`),
which nats-server resolves from its own environment: the .conf in the run dir holds no
secret, and the server's environment is readable only by the same user (as are the 0600
credential files the clients read). Permissions use allow lists: anything not allowed is
refused with a "Permissions Violation" error (deny is the default once `allow` is given).

Each service kind's user sits in an account of its own that imports, from the run's account
(JetStream, the learner, admin), exactly the subjects its permissions name (accounts.py): a
server answer that it aims at another subject through a reply subject stays in its own account.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from meshrl.transport.bus.accounts import RUN_ACCOUNT, account_of, crossing
from meshrl.transport.bus.subjects import Permissions

AUTH_TIMEOUT_S = 5


@dataclass(frozen=True)
class ServerAuth:
    config: str  # the accounts block (users, imports, exports), variables in place of passwords
    env: dict[str, str] = field(repr=False)  # variable -> password, for the server's environment


def password_variable(user: str) -> str:
    token = "".join(c if c.isalnum() else "_" for c in user).upper()
    return f"MESHRL_NATS_PASSWORD_{token}"


def _user_entry(user: str, perms: Permissions) -> str:
    # JSON lists are valid NATS config; the password stays an unquoted $VARIABLE reference.
    return (
        f"      {{user: {json.dumps(user)}, password: ${password_variable(user)}, permissions: {{\n"
        f"        publish: {{allow: {json.dumps(list(perms.publish))}}}\n"
        f"        subscribe: {{allow: {json.dumps(list(perms.subscribe))}}}\n"
        "      }}"
    )


def _exports(perms: dict[str, Permissions]) -> list[str]:
    """The run account's exports: each subject a service kind imports, to the accounts importing it."""
    services: dict[str, list[str]] = {}
    streams: dict[str, list[str]] = {}
    for user, p in perms.items():
        if account_of(user) != RUN_ACCOUNT:
            cross = crossing(user, p)
            for subject in cross.services:
                services.setdefault(subject, []).append(account_of(user))
            for subject in cross.streams:
                streams.setdefault(subject, []).append(account_of(user))
    # response_type stream: a pull request's answer is several messages (a batch, then a status)
    return [
        *(
            f"{{service: {json.dumps(s)}, accounts: {json.dumps(a)}, response_type: stream}}"
            for s, a in services.items()
        ),
        *(f"{{stream: {json.dumps(s)}, accounts: {json.dumps(a)}}}" for s, a in streams.items()),
    ]


def _imports(user: str, perms: Permissions) -> list[str]:
    cross, run = crossing(user, perms), json.dumps(RUN_ACCOUNT)
    return [
        *(f"{{service: {{account: {run}, subject: {json.dumps(s)}}}}}" for s in cross.services),
        *(f"{{stream: {{account: {run}, subject: {json.dumps(s)}}}}}" for s in cross.streams),
    ]


def _account(name: str, users: list[str], perms: dict[str, Permissions]) -> str:
    entries = "\n".join(_user_entry(user, perms[user]) for user in users)
    if name == RUN_ACCOUNT:
        extra = ["    jetstream: enabled", *_listed("exports", _exports(perms))]
    else:
        (user,) = users
        extra = _listed("imports", _imports(user, perms[user]))
    body = "\n".join([*extra, f"    users = [\n{entries}\n    ]"])
    return f"  {name}: {{\n{body}\n  }}"


def _listed(name: str, items: list[str]) -> list[str]:
    return [f"    {name} = [", *(f"      {item}" for item in items), "    ]"] if items else []


def server_auth(users: dict[str, tuple[Permissions, str]]) -> ServerAuth:
    """users: name -> (permissions, password)."""
    if not users:
        raise ValueError("no NATS users: an accounts block needs at least one user")
    perms = {user: p for user, (p, _) in users.items()}
    by_account: dict[str, list[str]] = {RUN_ACCOUNT: []}
    for user in users:
        by_account.setdefault(account_of(user), []).append(user)
    accounts = "\n".join(_account(name, members, perms) for name, members in by_account.items() if members)
    config = f"authorization {{\n  timeout: {AUTH_TIMEOUT_S}\n}}\naccounts {{\n{accounts}\n}}\n"
    return ServerAuth(config, {password_variable(user): password for user, (_, password) in users.items()})
