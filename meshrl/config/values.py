"""Checks on single values that many config sections share: ports, host:port addresses, URLs,
names, and text free of NUL. Each raises ValueError naming the key, the value and the fix,
which the config error prints as its line (meshrl.config.load).

    grpc_port: Port = 0                                  # 0..65535, 0 = a free port
    name: Name                                           # 1-128 printable characters
    check_address("reference.address", "ref:50053")    # host:port, a,b lists, dns:///host:port
    check_url_port("nats.url", "nats://n:4222")          # a URL's port, when it names one

Also here: `Strict`, the base of every config section (unknown keys, NaN and ±inf, NUL
characters, `true`/`false` where a number goes and integers past 64 bits are errors), the
check of a URL a service connects to (`check_endpoint`: scheme, host, port, no credentials,
query or fragment), and the caps on counts that one value could otherwise blow up,
shared by the config, the CLI and the gateway so each says the same number (a typo guard:
`replicas: 2147483647` starts nothing):

    Field(1, ge=1, le=MAX_REPLICAS)      # config (and MAX_RANKS, MAX_TENSOR_PARALLEL, MAX_NATS_REPLICAS)
    check_count(...)                     # `meshrl scale rollout=N`
    actions.scale(...)                   # the gateway's ScaleService
"""

from __future__ import annotations

import types
import typing
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

MAX_PORT = 65535
MAX_NAME_CHARS = 128
MAX_REPLICAS = 64  # replicas of one service kind on one run: more processes than this on one machine is never meant
MAX_RANKS = 64  # learner.ranks: torchrun processes of the learner on this machine
MAX_TENSOR_PARALLEL = 64  # rollout.tensor_parallel_size: engine workers of one replica
MAX_NATS_REPLICAS = 5  # nats.replicas: JetStream keeps at most 5 copies of a stream
# rollout/reward/reference.ack_wait_s: three missed heartbeats (a live consumer sends one every
# third of it), so a loaded host is not taken for a dead one; what a killed replica's work waits.
ACK_WAIT_S = 30.0
MAX_STEPS = 1_000_000  # learner.steps: a typo guard (a million optimizer steps is weeks of a large cluster)
MAX_KV_CACHE_GB = 4096.0  # rollout.kv_cache_gb: GiB of KV cache per replica; more memory than any host has
MAX_INT = 2**63 - 1  # any whole number: protobuf, numpy and the OS take 64 bits at most
Port = Annotated[int, Field(ge=0, le=MAX_PORT)]  # 0 = a free port the process (or launcher) picks


def check_printable_name(name: str) -> str:
    """A name that ends up in paths, subjects, metric labels and one-line logs: printable
    characters only (no NUL, newline or other control character)."""
    bad = next((c for c in name if not c.isprintable()), None)
    if bad is not None:
        raise ValueError(
            f"{name!r} holds the control character {bad!r}: a name goes into file names, "
            f"log lines and metric labels; use printable characters only"
        )
    if not name.strip():
        raise ValueError("a name must not be empty or blank; give it one, e.g. `name: my-run`")
    return name


Name = Annotated[str, Field(max_length=MAX_NAME_CHARS), AfterValidator(check_printable_name)]


def check_no_nul(value, where: str = ""):
    """ValueError when a string anywhere in `value` (lists and mappings too) holds a NUL: no
    path, URL or text of a config means anything with one, and the OS refuses it mid-run."""
    if isinstance(value, str) and "\x00" in value:
        raise ValueError(f"{where + ' ' if where else ''}holds a NUL character (\\x00); remove it")
    if isinstance(value, (list, tuple)):
        for item in value:
            check_no_nul(item, where)
    if isinstance(value, dict):
        for k, item in value.items():
            check_no_nul(k, f"{where}.{k}".lstrip("."))
            check_no_nul(item, f"{where}.{k}".lstrip("."))
    return value


def redacted(text: str) -> str:
    """A URL as a message may show it: without user:password@, query string or fragment (where
    a token would ride); host:port forms are returned as they are."""
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
        netloc = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        return text.split("?")[0].split("#")[0].rpartition("@")[2]


def port_of(key: str, where: str, text: str) -> int | None:
    """The port in `text` (host:port or a URL), checked to be 1..65535; None when none is given."""
    try:
        port = urlsplit(text if "://" in text else f"tcp://{text}").port
    except ValueError:
        port = -1
    if port == -1 or port == 0:
        raise ValueError(f"{key}={redacted(where)!r}: the port must be a number 1..{MAX_PORT}")
    return port


def check_endpoint(key: str, value: str | None, schemes: tuple[str, ...]) -> str | None:
    """One URL a service connects to: SCHEME://HOST[:PORT][/PATH] with a scheme of `schemes`
    (or a bare HOST:PORT), no user:password@, query string or fragment (credentials go in the
    environment, and this value is printed by --dry-run and saved in config.yaml)."""
    if value is None:
        return None
    text = value if "://" in value else f"{schemes[0]}://{value}"
    fix = f"give {schemes[0]}://HOST:PORT (schemes: {', '.join(schemes)})"
    try:
        parts = urlsplit(text)
        host = parts.hostname
    except ValueError:
        raise ValueError(f"{key} is not a URL; {fix}") from None
    if "@" in parts.netloc or parts.query or parts.fragment or "?" in text or "#" in text:
        raise ValueError(
            f"{key} must not hold credentials, a query string or a fragment (they would show in "
            f"--dry-run and RUN_DIR/config.yaml): give the bare endpoint; secrets go in the environment"
        )
    if parts.scheme not in schemes or not host or any(c.isspace() or c == "," for c in value):
        raise ValueError(f"{key}={redacted(value)!r} is not an endpoint URL; {fix}")
    port_of(key, value, text)
    return value


def _takes_number(annotation) -> bool:
    """Whether a field's type is int or float (alone or `| None`)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_takes_number(a) for a in typing.get_args(annotation))
    return annotation in (int, float)


def check_address(key: str, value: str | None) -> str | None:
    """host:port (or comma-separated replicas, or gRPC's dns:///host:port), every port 1..65535."""
    if value is None or value == "":
        return value
    for part in value.split(","):
        text = part.strip().removeprefix("dns:///")
        host, sep, _ = text.rpartition(":")
        if not sep or not host.strip("[]") or port_of(key, value, text) is None:
            raise ValueError(
                f"{key}={value!r}: expected host:port (e.g. reward.internal:50051), each port 1..{MAX_PORT}"
            )
    return value


def check_url_port(key: str, value: str | None) -> str | None:
    """A URL (or comma-separated list) whose ports, where given, are 1..65535."""
    for part in (value or "").split(","):
        if part.strip():
            port_of(key, value, part.strip())
    return value


class Strict(BaseModel):
    """Base for every config section: unknown keys are errors, not silently ignored, and so
    is a NaN or ±inf wherever a float is taken (YAML's `.nan`/`.inf`, or `nan` in an override):
    no knob means anything at a non-finite value, and a NaN would only surface mid-run."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value):
        """A NUL in a path or URL is refused by the OS mid-run (a traceback in a service): here."""
        return check_no_nul(value)

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_numbers(cls, value, info):
        """pydantic takes `true` as 1 and any integer however large: `learner.steps=true` and
        `steps: 10**30` are typos, and the second overflows wherever it is sent on."""
        field = cls.model_fields.get(info.field_name)
        if field is None or not _takes_number(field.annotation):
            return value
        if isinstance(value, bool):
            raise ValueError(f"{str(value).lower()} is a switch, not a number: give a number here")
        if isinstance(value, int) and abs(value) > MAX_INT:
            raise ValueError(f"{value:.3g} is past the 64-bit range of any count or size: give a smaller number")
        return value
