"""Bearer tokens with roles: viewer < operator < admin.

The tokens live in a file named by $MESHRL_GATEWAY_TOKENS_FILE (never in a run config):

    tokens:
      - {name: alice, role: operator, token: "…32+ random characters…"}
      - {name: grafana, role: viewer, token: "…"}

A viewer reads everything; an operator also pauses, resumes, checkpoints, stops and scales;
an admin also submits runs and rolls back. `name` is who the audit log records. Tokens are
compared in constant time and never logged or echoed.
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from meshrl.config.values import check_printable_name
from meshrl.config.yaml_text import load_yaml
from meshrl.errors import ConfigError
from meshrl.gateway.errors import GatewayError

ENV_VAR = "MESHRL_GATEWAY_TOKENS_FILE"
ROLES = ("viewer", "operator", "admin")
MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class Principal:
    name: str
    role: str
    token: str = field(repr=False)

    def may(self, role: str) -> bool:
        return ROLES.index(self.role) >= ROLES.index(role)


def _entry(i: int, item, path: Path) -> Principal:
    if not isinstance(item, dict) or not {"name", "role", "token"} <= set(item):
        raise ValueError(f"{path}: tokens[{i}] needs name, role and token")
    if extra := sorted(map(str, set(item) - {"name", "role", "token"})):
        raise ValueError(f"{path}: tokens[{i}] has unknown keys {extra}; an entry is {{name, role, token}}")
    try:
        check_printable_name(str(item["name"]))
    except ValueError as err:
        raise ValueError(f"{path}: tokens[{i}].name: {err}") from None
    if item["role"] not in ROLES:
        raise ValueError(
            f"{path}: tokens[{i}] ({item['name']}) has role {item['role']!r}; use one of {', '.join(ROLES)}"
        )
    if len(str(item["token"])) < MIN_TOKEN_CHARS:
        raise ValueError(
            f"{path}: tokens[{i}] ({item['name']}) is shorter than {MIN_TOKEN_CHARS} "
            "characters; make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )
    if any(c.isspace() or not c.isprintable() for c in str(item["token"])):
        raise ValueError(
            f"{path}: tokens[{i}] ({item['name']}) holds spaces or control characters; "
            "a token travels in an HTTP header: use letters, digits, '-' and '_'"
        )
    return Principal(str(item["name"]), item["role"], str(item["token"]))


def _unique(principals: list[Principal], path: Path) -> list[Principal]:
    """The same token twice would log every call as the first name: refused."""
    seen: dict[str, str] = {}
    for p in principals:
        if p.token in seen:
            raise ValueError(f"{path}: {p.name} and {seen[p.token]} have the same token; give each its own")
        seen[p.token] = p.name
    return principals


def load_tokens(path: str | Path | None = None) -> list[Principal]:
    """The principals of the tokens file ($MESHRL_GATEWAY_TOKENS_FILE when `path` is None)."""
    path = path or os.environ.get(ENV_VAR)
    if not path:
        raise ValueError(
            f"no tokens file: set {ENV_VAR} to a YAML file with "
            "tokens: [{name: ..., role: viewer|operator|admin, token: ...}]"
        )
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"cannot read the tokens file {path} ({ENV_VAR}): {err.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"the tokens file {path} ({ENV_VAR}) is not UTF-8 text") from None
    try:
        data = load_yaml(text, f"the tokens file {path}") or {}
    except ConfigError as err:
        raise ValueError(str(err)) from None
    items = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise ValueError(f"{path} has no 'tokens:' list of {{name, role, token}}")
    return _unique([_entry(i, item, path) for i, item in enumerate(items)], path)


class TokenAuth:
    def __init__(self, principals: list[Principal]):
        self.principals = principals

    def authenticate(self, token: str | None) -> Principal:
        # A header's bytes that are no UTF-8 arrive as surrogates: they match no token, and
        # must not fail the encoding (an HTTP 500) on the way to saying so.
        given = token.encode("utf-8", "surrogatepass") if token else b""
        for p in self.principals:  # no early exit on a match length: compare_digest each
            if given and hmac.compare_digest(p.token.encode(), given):
                return p
        raise GatewayError(
            grpc.StatusCode.UNAUTHENTICATED,
            "missing or unknown bearer token: send 'authorization: Bearer TOKEN' "
            "with a token from the gateway's tokens file",
        )

    def authorize(self, token: str | None, role: str, action: str) -> Principal:
        who = self.authenticate(token)
        if not who.may(role):
            raise GatewayError(
                grpc.StatusCode.PERMISSION_DENIED, f"{action} needs the {role} role; {who.name} is a {who.role}"
            )
        return who


def bearer(header: str | None) -> str | None:
    """'Bearer abc' → 'abc'; anything else → None."""
    if header and header[:7].lower() == "bearer ":
        return header[7:].strip()
    return None
