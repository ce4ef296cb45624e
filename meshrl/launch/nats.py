"""The run's NATS: an embedded server in the run dir, or the one `nats.url` names.

An embedded server that dies is restarted on the same port and store dir (meshrl.launch.restarts).

An embedded server always requires credentials: at start, one NATS user per service kind
with exactly its subjects, plus `admin` (meshrl.transport.bus.run_auth), each password in a
0600 file under RUN_DIR/secrets/ (removed when the server stops; never in config.yaml or a
log). For the block, this process's own clients (stream creation, alerts, status) use the
admin file through MESHRL_NATS_CREDENTIALS_FILE; each service gets its kind's file
(`meshrl.launch.secrets.service_credentials_env`). An external `nats.url` is used with whatever credentials the
environment names (none: a server without auth).

`nats.tls: on | mutual` (embedded only) serves TLS with a run CA (meshrl.launch.secrets): this process
and each service get MESHRL_NATS_TLS_CA_FILE, and with `mutual` their user's client
certificate and key (MESHRL_NATS_TLS_CERT_FILE / _KEY_FILE), all in RUN_DIR/secrets/.

Streams are created once here, before any service starts, so no two services race to
create them with different settings.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Iterator

from meshrl.config.schema import RunConfig
from meshrl.errors import LaunchError
from meshrl.launch.restarts import RestartPolicy, RestartReporter, kept_alive
from meshrl.launch.secrets import run_tls
from meshrl.run.secrets import admin_credentials, secrets_dir
from meshrl.run_layout import RunDir
from meshrl.transport.bus import Bus, BusUnavailable
from meshrl.transport.bus.run_auth import create_run_auth, remove_run_secrets
from meshrl.transport.bus.server import EmbeddedNats
from meshrl.transport.bus.subjects import ADMIN, run_consumers


@contextlib.contextmanager
def nats_url(cfg: RunConfig, run_dir: Path, run_id: str | None = None) -> Iterator[str]:
    """Yield the NATS url for the run; an embedded server lives exactly as long as the block.
    `run_id` names the run whose subjects each service kind's user may use (None: admin only)."""
    if cfg.nats.url != "embedded":
        yield cfg.nats.url
        return

    auth = create_run_auth(secrets_dir(run_dir), run_id, reference_enabled=cfg.reference_enabled)
    try:
        tls_block, admin_tls = run_tls(cfg, run_dir, auth.files)
        with admin_credentials(auth.files[ADMIN], admin_tls), _embedded(cfg, run_dir, auth.server, tls_block) as url:
            yield url
    finally:
        remove_run_secrets(secrets_dir(run_dir))


@contextlib.contextmanager
def _embedded(cfg: RunConfig, run_dir: Path, auth, tls: str = "") -> Iterator[str]:
    try:
        server = EmbeddedNats(RunDir(run_dir).nats, auth=auth, tls=tls)  # started by the constructor
    except BusUnavailable as err:
        raise LaunchError(f"could not start the embedded nats-server in {run_dir / 'nats'}: {err}") from None
    # A killed server would end the run: restarted on the same port and store (meshrl.launch.restarts).
    with kept_alive(server, RestartReporter(cfg, run_dir, cfg.run.name), RestartPolicy.from_config(cfg.launch)):
        yield server.url


async def _create_streams(url: str, run_id: str, timeout_s: float, replicas: int, ack_waits: dict | None) -> None:
    try:
        bus = await Bus.connect(url, run_id, name="meshrl-launcher", timeout=timeout_s, replicas=replicas)
    except BusUnavailable as err:  # its message names the url and how to start a server
        raise LaunchError(f"{err}; or set nats.url=embedded") from None
    try:
        await bus.ensure_streams(run_consumers(ack_waits))
    finally:
        await bus.close()


def create_streams(
    url: str, run_id: str, *, timeout_s: float = 5.0, replicas: int = 1, ack_waits: dict | None = None
) -> None:
    """Connect, create the run's streams and durables (idempotent), disconnect. LaunchError if unreachable.
    `ack_waits`: RunConfig.ack_waits (subjects.run_consumers)."""
    asyncio.run(_create_streams(url, run_id, timeout_s, replicas, ack_waits))


@contextlib.contextmanager
def run_bus(cfg: RunConfig, run_dir: Path, run_id: str) -> Iterator[str]:
    """`nats_url` for the block, with the run's streams created before any service starts."""
    with nats_url(cfg, run_dir, run_id) as url:
        create_streams(
            url, run_id, timeout_s=cfg.nats.connect_timeout_s, replicas=cfg.nats.replicas, ack_waits=cfg.ack_waits
        )
        yield url
