"""Durable pull consumers on a stage's work queue.

A work-queue stream allows one consumer per subject, so each stage has one durable name
(e.g. "rollout" on `prompts`); every replica binds to it and the server hands each message
to one of them. The consumer lives on the server: a replica that restarts with the same
durable name resumes where the group left off, and unacked messages are redelivered after
`ack_wait`. Backoff between failed attempts is applied client-side by `nak(delay)` (the
server's `backoff` list would replace `ack_wait` for long handlers, so it is not used).
"""

from nats.js.errors import APIError, BadRequestError, NotFoundError

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.errors import BusError
from meshrl.transport.bus.retry import retry_transient
from meshrl.transport.bus.subjects import ConsumerSpec

NOT_UNIQUE = (10099, 10100)  # a work-queue stream already has a consumer on this subject
CONSUMER_NOT_FOUND = 10014
PUSH_TO_PULL = 10012  # "can not update push consumer to pull based"

# A pull subscription buffers at most this many bytes client-side; the server's own
# per-client limit (max_pending, 64 MB) must never be reached or it drops the client.
PENDING_BYTES_LIMIT = 32 * 1024 * 1024


async def pull_subscription(js, run_id: str, stage: str, spec: ConsumerSpec, *, may_create: bool = True):
    """Bind to the stage's durable. `may_create` (the learner, admin, a server without users):
    create it, or update it to `spec`, first; otherwise it must exist (subjects.run_consumers)."""
    stream = names.stage_stream(run_id, stage)
    try:
        if may_create:
            await retry_transient(lambda: js.add_consumer(stream, config=spec.config()), attempts=12)
        else:  # ≈15 s of retries: rides out a server restart
            await retry_transient(lambda: js.consumer_info(stream, spec.durable), attempts=12)
        return await js.pull_subscribe_bind(
            durable=spec.durable, stream=stream, pending_bytes_limit=PENDING_BYTES_LIMIT
        )
    except BadRequestError as err:
        if err.err_code not in NOT_UNIQUE:
            raise
        raise other_durable(run_id, stage, spec.durable) from err
    except NotFoundError as err:
        if err.err_code == CONSUMER_NOT_FOUND:
            raise uncreated_durable(spec.durable, stream) from err
        raise missing_stream(stream) from err
    except APIError as err:
        if err.err_code != PUSH_TO_PULL:
            raise
        raise push_durable(spec.durable, stream) from err


def other_durable(run_id: str, stage: str, durable: str) -> BusError:
    return BusError(
        f"stage {stage!r} of run {run_id!r} already has a consumer with another durable name than "
        f"{durable!r}: a work queue allows one durable per stage, so every replica must use "
        "the same name"
    )


def uncreated_durable(durable: str, stream: str) -> BusError:
    return BusError(
        f"durable {durable!r} on stream {stream} does not exist and this service's NATS "
        "user may not create it: the learner creates the run's consumers with its streams; "
        "start the learner first (services wait for the run KV)"
    )


def push_durable(durable: str, stream: str) -> BusError:
    return BusError(
        f"durable {durable!r} on {stream} is a push consumer: someone created it with a "
        "deliver_subject (only the learner and admin may create consumers: a push consumer makes "
        "the server publish where its creator may not); delete it as admin and restart the run"
    )


async def server_spec(sub, spec: ConsumerSpec) -> ConsumerSpec:
    """The durable's ack_wait and max_deliver as the server holds them (its creator chose them)."""
    try:
        config = (await sub.consumer_info()).config
    except Exception:  # noqa: BLE001 - keep the caller's values rather than fail to start
        return spec
    return ConsumerSpec(
        spec.durable,
        ack_wait=config.ack_wait or spec.ack_wait,
        max_deliver=config.max_deliver or spec.max_deliver,
        max_ack_pending=config.max_ack_pending or spec.max_ack_pending,
    )


def missing_stream(stream: str) -> BusError:
    return BusError(f"stream {stream} does not exist: call `await bus.ensure_streams()` once for the run first")
