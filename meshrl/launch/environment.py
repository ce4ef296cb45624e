"""The run's environment at launch: the bearer token of the replicas the launcher starts, and
the health of a service at `environment.address` before anything starts.

Token: with `environment.builtin` launched here and no token configured, the launcher makes a fresh
random token for each start in RUN_DIR/secrets/environment-token (0600, removed when the run
stops) and names that file in the resolved config (`environment.token_file`), which the
rollout's client reads; the replicas get it as MESHRL_ENV_TOKEN_FILE. So on a shared host no
other local user can open episodes (or run programs in the python sandbox) on the run's
environment. A token the user configured (token_env / token_file) is passed on instead.

Health: a run whose environment is a service at an address (not launched here) waits up to
`environment.start_timeout_s` for it to answer SERVING (grpc.health.v1, over its TLS), else
stops before any process starts, naming the address: an environment that is not there would
otherwise drop every group the run samples. Then it must serve `environment.name`
(environment_name.py), for the same reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
from pathlib import Path
from typing import Iterator

from grpc_health.v1 import health_pb2_grpc

from meshrl.api.env.v1 import env_pb2
from meshrl.config.schema import RunConfig
from meshrl.errors import LaunchError
from meshrl.launch.environment_name import check_names_served
from meshrl.private_files import make_private_dir, write_private_file
from meshrl.run.secrets import secrets_dir
from meshrl.services.environment.adapters.textarena import probe as textarena_probe
from meshrl.services.environment.adapters.verifiers.probe import ProbeFailed, probe
from meshrl.transport.http_health import wait_http_healthy
from meshrl.transport.rpc.channel import check_status
from meshrl.transport.rpc.mesh_tls import channel_credentials
from meshrl.transport.rpc.tls import open_external_channel

TOKEN_FILE = "environment-token"
SERVICE = env_pb2.DESCRIPTOR.services_by_name["EnvironmentService"].full_name


def launches_environment(cfg: RunConfig) -> bool:
    """True when this launcher starts environment replicas (a builtin with no address)."""
    return cfg.environment is not None and cfg.environment.launched and not cfg.algorithm.offline


def name_token_file(cfg: RunConfig, run_dir: Path) -> None:
    """Point environment.token_file at the run's token (when launched and none is configured)."""
    env = cfg.environment
    if launches_environment(cfg) and not env.token_env and (not env.token_file or _is_ours(env.token_file, run_dir)):
        env.token_file = str(secrets_dir(run_dir).resolve() / TOKEN_FILE)


def _is_ours(path: str, run_dir: Path) -> bool:
    return Path(path).name == TOKEN_FILE and Path(path).parent.resolve() == secrets_dir(run_dir).resolve()


def token_env(cfg: RunConfig) -> dict[str, str]:
    """What an environment replica reads its token from (MESHRL_ENV_TOKEN[_FILE])."""
    env = cfg.environment
    if env.token_file:
        return {"MESHRL_ENV_TOKEN_FILE": env.token_file}
    if env.token_env:
        return {"MESHRL_ENV_TOKEN": os.environ.get(env.token_env, "")}
    return {}


@contextlib.contextmanager
def run_environment_token(cfg: RunConfig, run_dir: Path) -> Iterator[None]:
    """Write a fresh token for the block when the token file is the run's own."""
    path = Path(cfg.environment.token_file) if launches_environment(cfg) and cfg.environment.token_file else None
    if path is None or not _is_ours(str(path), run_dir):
        yield
        return
    make_private_dir(path.parent)
    write_private_file(path, secrets.token_urlsafe(32).encode())
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def environment_ready(cfg: RunConfig, run_dir: Path) -> Iterator[None]:
    """The run's own token for the block, once the environment the run uses answers."""
    with run_environment_token(cfg, run_dir):
        check_environment_up(cfg)
        yield


def check_environment_up(cfg: RunConfig) -> None:
    """LaunchError unless the environment at `environment.address` is SERVING in time (or, for
    launched replicas of the OpenEnv adapter, the OpenEnv server they play answers its /health)."""
    env = cfg.environment
    if env is not None and env.openenv is not None and launches_environment(cfg):
        check_openenv_up(env)
    if env is not None and env.verifiers is not None and launches_environment(cfg):
        check_verifiers_loads(env)
    if env is not None and env.textarena is not None and launches_environment(cfg):
        check_textarena_plays(env)
    if env is None or env.launched or cfg.algorithm.offline:
        return
    try:
        asyncio.run(wait_environment_serving(env, within_s=env.start_timeout_s))
    except ConnectionError as err:
        raise LaunchError(str(err)) from None
    asyncio.run(check_names_served(env))


def check_openenv_up(env) -> None:
    try:
        wait_http_healthy(env.openenv.url, within_s=env.start_timeout_s)
    except ConnectionError as err:
        raise LaunchError(
            f"environment {env.name!r}: the OpenEnv server at {err} (environment.start_timeout_s): start it "
            f"first (its own process or container) or fix environment.openenv.url"
        ) from None


def check_verifiers_loads(env) -> None:
    """The interpreter of environment.verifiers loads the module's environment (probe.py)."""
    try:
        probe(env.verifiers)
    except ProbeFailed as err:
        raise LaunchError(f"environment {env.name!r}: {err}") from None


def check_textarena_plays(env) -> None:
    """The interpreter of environment.textarena makes the game for one player (probe.py)."""
    try:
        textarena_probe.probe(env.textarena)
    except textarena_probe.ProbeFailed as err:
        raise LaunchError(f"environment {env.name!r}: {err}") from None


async def wait_environment_serving(env, within_s: float, poll_s: float = 1.0) -> None:
    """Return once every address of `environment.address` ("a:1,b:2" lists replicas) is SERVING;
    ConnectionError naming the ones that are not after `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        statuses = {a: await _status(env, a, timeout_s=min(2.0, within_s)) for a in env.addresses}
        bad = {a: status for a, status in statuses.items() if status != "SERVING"}
        if not bad:
            return
        if time.monotonic() >= deadline:
            raise ConnectionError(
                f"{'; '.join(f'environment {env.name!r} at {a}: {s}' for a, s in bad.items())} after "
                f"{within_s:g} s (environment.start_timeout_s): start the environment service there, or fix "
                f"environment.address / environment.tls; check it with `meshrl env check ADDRESS`"
            )
        await asyncio.sleep(poll_s)


async def _status(env, address: str, timeout_s: float) -> str:
    tls = env.tls
    credentials = (
        channel_credentials(tls.ca_file, tls.cert_file, tls.key_file, who=f"environment {env.name!r}") if tls else None
    )
    async with open_external_channel(
        address, credentials=credentials, server_name=tls.server_name if tls else None
    ) as channel:
        return await check_status(health_pb2_grpc.HealthStub(channel), SERVICE, timeout_s)
