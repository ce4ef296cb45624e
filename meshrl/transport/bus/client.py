"""Bus: one service's connection to a run's NATS JetStream.

    bus = await Bus.connect(url, run_id, name="rollout-0")
    await bus.ensure_streams()
    await bus.publish("generated", group, msg_id=group.group_id)
    await bus.worker("prompts", "rollout", handle, batch=8, ack_wait=120, max_deliver=3)
    batch = await bus.pull("ready", "learner", max_msgs=16, timeout=2)
    await bus.state.cas("weights_version", {"version": 3}, revision)
    await bus.weights.put_file(names.weights_object_name(3), "model.safetensors")

`url` may name several servers of one cluster, comma-separated (`nats://a:4222,nats://b:4222`,
or a list): the client connects to one and fails over to the others. `replicas` is the
JetStream replica count of the streams and buckets `ensure_streams` creates (3 on a
three-node cluster; 1, the default, on a single server).

Credentials: `credentials=` or, by default, the file MESHRL_NATS_CREDENTIALS_FILE names
(credentials.py); the client then uses its user's own inbox prefix, the only one its
permissions let it subscribe to (subjects.py). None: connect without auth. A publish the
server refuses raises PermissionDenied at once (denials.py).

TLS: `tls=` (tls.TlsFiles) or, by default, the files MESHRL_NATS_TLS_CA_FILE (+ _CERT_FILE,
_KEY_FILE for mutual TLS) name (tls.py); a server that then does not require TLS is refused.

Simplification: one connection per service; JetStream domain/prefix are not used.
"""

import asyncio
import logging
from typing import Sequence

import nats
import nats.errors
import nats.js.errors
from google.protobuf.message import Message
from nats.aio.client import Client as NATS
from nats.js import api

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.consumer import ConsumerSpec, missing_stream
from meshrl.transport.bus.context import Delivery
from meshrl.transport.bus.credentials import Credentials, credentials_from_env
from meshrl.transport.bus.denials import GuardedNATS
from meshrl.transport.bus.errors import BusUnavailable
from meshrl.transport.bus.events import Listener
from meshrl.transport.bus.kv import RunState
from meshrl.transport.bus.messages import check_type
from meshrl.transport.bus.objects import WeightsStore
from meshrl.transport.bus.publish import publish_with_retry
from meshrl.transport.bus.pull import Puller
from meshrl.transport.bus.retry import election_patience, retry_transient
from meshrl.transport.bus.streams import ensure_run_streams
from meshrl.transport.bus.subjects import CONSUMER_CREATORS, inbox_prefix
from meshrl.transport.bus.tls import TlsFiles, tls_from_env
from meshrl.transport.bus.worker import Handler, Worker

log = logging.getLogger(__name__)
START_HINT = "start one with `.venv/bin/nats-server -js` or let `meshrl` start an embedded one (nats.url: embedded)"


def server_urls(url: str | Sequence[str]) -> list[str]:
    """`nats://a:4222,nats://b:4222` (or a list of them) → every server URL, in order."""
    parts = url.split(",") if isinstance(url, str) else list(url)
    servers = [part.strip() for part in parts if part.strip()]
    if not servers:
        raise BusUnavailable(f"no NATS server URL in {url!r}: expected nats://HOST:PORT, comma-separated for a cluster")
    return servers


def _auth_options(credentials: Credentials | None) -> dict:
    if credentials is None:
        return {}
    return {"user": credentials.user, "password": credentials.password, "inbox_prefix": inbox_prefix(credentials.user)}


def _refused(url, credentials: Credentials | None) -> BusUnavailable:
    who = f"user {credentials.user!r} (wrong or old password?)" if credentials else "a client without credentials"
    return BusUnavailable(
        f"NATS at {url} refused {who}: set MESHRL_NATS_CREDENTIALS_FILE to the credential "
        "file the launcher wrote for this service kind (RUN_DIR/secrets/nats-<kind>.json)"
    )


def _tls_options(tls: TlsFiles | None) -> dict:
    return {} if tls is None else {"tls": tls.context()}


async def _open(
    url: str | Sequence[str], name: str, timeout: float, credentials: Credentials | None, tls: TlsFiles | None = None
) -> NATS:
    nc = GuardedNATS()
    try:
        await asyncio.wait_for(
            nc.connect(
                servers=server_urls(url),
                name=name,
                connect_timeout=min(timeout, 2.0),
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.5,
                error_cb=nc.denials.on_error,
                pending_size=16 * 1024 * 1024,
                **_auth_options(credentials),
                **_tls_options(tls),
            ),
            timeout,
        )
    except (asyncio.TimeoutError, OSError, nats.errors.Error) as err:
        await _close_quietly(nc)
        if nc.denials.auth_refused or isinstance(err, nats.errors.AuthorizationError):
            raise _refused(url, credentials) from None
        hint = f" (TLS with CA {tls.ca_file}: does that CA sign the server's certificate?)" if tls else ""
        raise BusUnavailable(
            f"cannot reach NATS at {url} within {timeout:g} s: is nats-server running? {START_HINT}{hint} ({err!r})"
        ) from None
    await _require_tls(nc, url, tls)
    return nc


async def _require_tls(nc: NATS, url, tls: TlsFiles | None) -> None:
    # nats-py upgrades to TLS only when the server asks for it: a client configured for TLS
    # must not go on in plaintext with a server (or impostor) that does not.
    if tls is not None and not nc._server_info.get("tls_required"):
        await _close_quietly(nc)
        raise BusUnavailable(
            f"NATS at {url} does not require TLS, but this client is configured for it "
            f"({tls.ca_file}): give the server a tls {{}} block, or unset MESHRL_NATS_TLS_*"
        )


async def _check_jetstream(nc: NATS, url: str, timeout: float):
    js = nc.jetstream(timeout=timeout)
    try:
        await js.account_info()
    except (
        nats.errors.NoRespondersError,
        nats.js.errors.ServiceUnavailableError,
        nats.errors.TimeoutError,
        nats.js.errors.APIError,
    ) as err:
        await _close_quietly(nc)
        raise BusUnavailable(
            f"NATS at {url} answers but JetStream is not enabled: restart nats-server with -js ({err!r})"
        ) from None
    return js


async def _close_quietly(nc: NATS) -> None:
    try:
        await nc.close()
    except Exception:  # noqa: BLE001 - closing a half-open client
        pass


class Bus:
    """Publish, consume, run state and weights for one run. Create with `Bus.connect`."""

    def __init__(
        self, nc: NATS, js, url: str | Sequence[str], run_id: str, *, replicas: int = 1, creates_consumers: bool = True
    ):
        if replicas < 1:
            raise ValueError(f"replicas={replicas}: the JetStream replica count must be >= 1 (3 on a 3-node cluster)")
        self.nc, self.js, self.url, self.run_id, self.replicas = nc, js, url, run_id, replicas
        self.creates_consumers = creates_consumers  # else it binds to durables the learner made
        self._puller = Puller(js, run_id, may_create=creates_consumers)
        self.state = RunState.for_bucket(js, names.kv_bucket(run_id))
        self.weights = WeightsStore(js, names.object_bucket(run_id))

    @classmethod
    async def connect(
        cls,
        url: str | Sequence[str],
        run_id: str,
        *,
        name: str,
        timeout: float = 5.0,
        replicas: int = 1,
        credentials: Credentials | None = None,
        tls: TlsFiles | None = None,
    ) -> "Bus":
        """Connect or raise BusUnavailable within `timeout` seconds; checks JetStream is on.
        `credentials` default to those MESHRL_NATS_CREDENTIALS_FILE names (none if unset),
        `tls` to the files MESHRL_NATS_TLS_* name (plaintext if unset)."""
        names.run_token(run_id)
        credentials = credentials or credentials_from_env()
        nc = await _open(url, name, timeout, credentials, tls or tls_from_env())
        js = await _check_jetstream(nc, url, timeout)
        return cls(
            nc,
            js,
            url,
            run_id,
            replicas=replicas,
            creates_consumers=credentials is None or credentials.user in CONSUMER_CREATORS,
        )

    async def close(self) -> None:
        await self._puller.close()
        await _close_quietly(self.nc)

    async def __aenter__(self) -> "Bus":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def ensure_streams(self, consumers: dict[str, ConsumerSpec] | None = None) -> None:
        """Create the run's work queues, their durables (`consumers`: subjects.run_consumers()
        by default), dead-letter/events streams, object store and KV."""
        await ensure_run_streams(self.js, self.run_id, replicas=self.replicas, consumers=consumers)

    # ---- work queues -------------------------------------------------------------------

    async def publish(
        self, stage: str, message: Message, *, msg_id: str, headers: dict[str, str] | None = None
    ) -> api.PubAck:
        """Publish a stage's message with Nats-Msg-Id = msg_id (the group id: dedup)."""
        check_type(stage, message)
        if not msg_id:
            raise ValueError(f"msg_id is empty for a {stage} message: pass the group id")
        return await publish_with_retry(
            self.js,
            names.stage_subject(self.run_id, stage),
            message.SerializeToString(),
            msg_id=msg_id,
            headers=headers,
        )

    async def worker(
        self,
        stage: str,
        durable: str,
        handler: Handler,
        *,
        batch: int = 1,
        concurrency: int | None = None,
        ack_wait: float = 60.0,
        max_deliver: int = 5,
        backoff: Sequence[float] = (1.0, 5.0, 30.0),
        auto_in_progress: bool = False,
    ) -> None:
        """Run the consumer loop until cancelled (see meshrl.transport.bus.worker)."""
        await self.make_worker(
            stage,
            durable,
            handler,
            batch=batch,
            concurrency=concurrency,
            ack_wait=ack_wait,
            max_deliver=max_deliver,
            backoff=backoff,
            auto_in_progress=auto_in_progress,
        ).run()

    def make_worker(
        self,
        stage: str,
        durable: str,
        handler: Handler,
        *,
        batch: int = 1,
        concurrency: int | None = None,
        ack_wait: float = 60.0,
        max_deliver: int = 5,
        backoff: Sequence[float] = (1.0, 5.0, 30.0),
        auto_in_progress: bool = False,
    ) -> Worker:
        """The Worker object itself (its `.counts` show acked / retried / dead)."""
        spec = ConsumerSpec(durable, ack_wait=ack_wait, max_deliver=max_deliver)
        return Worker(
            self.js,
            self.run_id,
            names.check_stage(stage),
            spec,
            handler,
            batch=batch,
            concurrency=concurrency,
            backoff=backoff,
            auto_in_progress=auto_in_progress,
            may_create=self.creates_consumers,
        )

    async def pull(
        self,
        stage: str,
        durable: str,
        max_msgs: int = 1,
        timeout: float = 1.0,
        *,
        ack_wait: float = 300.0,
        max_deliver: int = 5,
    ) -> list[Delivery]:
        """Fetch up to max_msgs parsed messages; `await d.ack()` each one when done."""
        spec = ConsumerSpec(durable, ack_wait=ack_wait, max_deliver=max_deliver)
        return await self._puller.pull(names.check_stage(stage), spec, max_msgs, timeout)

    async def pending(self, stage: str) -> int:
        """Messages on the stage's queue not yet acked (waiting + in flight). Retried through a
        cluster's leader election (the learner reads this every step: a timeout would kill it)."""
        stream = names.stage_stream(self.run_id, stage)
        try:
            info = await retry_transient(lambda: self.js.stream_info(stream), patience_s=election_patience(self.nc))
        except nats.js.errors.NotFoundError as err:
            raise missing_stream(stream) from err
        return info.state.messages

    # ---- events ------------------------------------------------------------------------

    async def publish_event(
        self, subject: str, message: Message, *, msg_id: str | None = None, headers: dict[str, str] | None = None
    ) -> api.PubAck:
        """Publish to a non-queue subject (names.events_subject / weights_loaded_subject)."""
        return await publish_with_retry(self.js, subject, message.SerializeToString(), msg_id=msg_id, headers=headers)

    async def listen(self, subject: str, cls: type[Message]) -> Listener:
        """Subscribe now to `subject` (see meshrl.transport.bus.events); e.g. WeightsLoaded acks."""
        return await Listener.open(self.nc, subject, cls)
