"""Durable pull consumers on a stage's work queue.

A work-queue stream allows one consumer per subject, so each stage has one durable name
(e.g. "rollout" on `prompts`); every replica binds to it and the server hands each message
to one of them. The consumer lives on the server: a replica that restarts with the same
durable name resumes where the group left off, and unacked messages are redelivered after
`ack_wait`. Backoff between failed attempts is applied client-side by `nak(delay)` (the
server's `backoff` list would replace `ack_wait` for long handlers, so it is not used).
"""
from dataclasses import dataclass

from nats.js import api
from nats.js.errors import BadRequestError, NotFoundError

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.errors import BusError
from meshrl.transport.bus.retry import retry_transient

NOT_UNIQUE = (10099, 10100)  # a work-queue stream already has a consumer on this subject

# A pull subscription buffers at most this many bytes client-side; the server's own
# per-client limit (max_pending, 64 MB) must never be reached or it drops the client.
PENDING_BYTES_LIMIT = 32 * 1024 * 1024


@dataclass(frozen=True)
class ConsumerSpec:
    durable: str
    ack_wait: float = 60.0
    max_deliver: int = 5
    max_ack_pending: int = 1000

    def config(self) -> api.ConsumerConfig:
        if self.max_deliver < 1:
            raise ValueError(f"max_deliver={self.max_deliver}: must be >= 1 (the defaults redeliver forever)")
        return api.ConsumerConfig(
            durable_name=self.durable,
            ack_policy=api.AckPolicy.EXPLICIT,
            deliver_policy=api.DeliverPolicy.ALL,
            ack_wait=self.ack_wait,
            max_deliver=self.max_deliver,
            max_ack_pending=self.max_ack_pending,
        )


async def pull_subscription(js, run_id: str, stage: str, spec: ConsumerSpec):
    """Create the durable if missing (an existing one keeps its config) and bind to it."""
    stream = names.stage_stream(run_id, stage)
    try:
        return await retry_transient(lambda: js.pull_subscribe(
            names.stage_subject(run_id, stage), durable=spec.durable, stream=stream, config=spec.config(),
            pending_bytes_limit=PENDING_BYTES_LIMIT), attempts=12)  # ≈15 s: rides out a server restart
    except BadRequestError as err:
        if err.err_code not in NOT_UNIQUE:
            raise
        raise BusError(f"stage {stage!r} of run {run_id!r} already has a consumer with another durable name than "
                       f"{spec.durable!r}: a work queue allows one durable per stage, so every replica must use "
                       "the same name") from err
    except NotFoundError as err:
        raise missing_stream(stream) from err


def missing_stream(stream: str) -> BusError:
    return BusError(f"stream {stream} does not exist: call `await bus.ensure_streams()` once for the run first")
