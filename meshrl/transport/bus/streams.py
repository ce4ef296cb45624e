"""Create a run's streams and buckets, idempotently (several services may race here).

- one work-queue stream per stage (a message lives until a consumer acks it), with a
  duplicate window so a republished group id is stored once;
- a dead-letter stream and an events stream (limits retention: kept for inspection);
- the four stages' durable pull consumers (subjects.run_consumers: the services only bind to them);
- the weights object store, then the run-state KV bucket last: services wait for the KV
  (run_wait.py), so when they start, their durables exist.
Creating with an identical config is a no-op on the server; if a stream already exists
with a different config, the existing one is kept (the first service to start wins). A
durable that exists is updated to the given config; one that someone made a push consumer
is refused by name (the server cannot turn it back into a pull consumer).
`replicas` is the JetStream replica count of every one of them: 1 on a single server, 3 on
a three-node cluster (the run survives the loss of one node); more than the cluster has
nodes is refused with a message that says so.
"""

from nats.js import api
from nats.js.errors import APIError

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.consumer import PUSH_TO_PULL, push_durable
from meshrl.transport.bus.errors import BusError
from meshrl.transport.bus.subjects import ConsumerSpec, run_consumers

DUPLICATE_WINDOW_S = 20 * 60
EVENTS_MAX_AGE_S = 7 * 24 * 3600
KV_HISTORY = 8
STREAM_IN_USE = 10058  # "stream name already in use with a different configuration"
# "replicas > 1 not supported in non-clustered mode", "insufficient resources" (fewer peers than replicas)
TOO_FEW_NODES = (10074, 10005)


def work_stream_config(run_id: str, stage: str, replicas: int = 1) -> api.StreamConfig:
    return api.StreamConfig(
        name=names.stage_stream(run_id, stage),
        subjects=[names.stage_subject(run_id, stage)],
        retention=api.RetentionPolicy.WORK_QUEUE,
        storage=api.StorageType.FILE,
        duplicate_window=DUPLICATE_WINDOW_S,
        num_replicas=replicas,
    )


def limits_stream_config(name: str, subjects: list[str], replicas: int = 1) -> api.StreamConfig:
    return api.StreamConfig(
        name=name,
        subjects=subjects,
        retention=api.RetentionPolicy.LIMITS,
        storage=api.StorageType.FILE,
        max_age=EVENTS_MAX_AGE_S,
        duplicate_window=120,
        num_replicas=replicas,
    )


def run_stream_configs(run_id: str, replicas: int = 1) -> list[api.StreamConfig]:
    configs = [work_stream_config(run_id, stage, replicas) for stage in names.STAGES]
    configs.append(limits_stream_config(names.dead_stream(run_id), [names.dead_subject(run_id)], replicas))
    configs.append(
        limits_stream_config(
            names.events_stream(run_id), [names.events_subject(run_id), names.weights_loaded_subject(run_id)], replicas
        )
    )
    return configs


async def _keep_existing(create, what: str, replicas: int) -> None:
    """Await `create`; a stream that exists with another config is kept as it is."""
    try:
        await create
    except APIError as err:
        if err.err_code == STREAM_IN_USE:
            return
        if replicas > 1 and err.err_code in TOO_FEW_NODES:
            raise BusError(
                f"cannot create {what} with replicas={replicas}: the NATS server has fewer JetStream "
                f"nodes than that ({err.description}); use replicas=1 on a single server, or at most "
                "the number of nodes of the cluster"
            ) from err
        raise


async def ensure_durables(js, run_id: str, consumers: dict[str, ConsumerSpec]) -> None:
    """Each stage's durable pull consumer, with its config (an existing pull one is updated)."""
    for stage, spec in consumers.items():
        stream = names.stage_stream(run_id, names.check_stage(stage))
        try:
            await js.add_consumer(stream, config=spec.config())
        except APIError as err:
            if err.err_code != PUSH_TO_PULL:
                raise
            raise push_durable(spec.durable, stream) from err


async def ensure_run_streams(
    js, run_id: str, *, replicas: int = 1, consumers: dict[str, ConsumerSpec] | None = None
) -> None:
    """All of a run's streams, its durables, the object store and the KV bucket exist after this."""
    for config in run_stream_configs(run_id, replicas):
        await _keep_existing(js.add_stream(config), f"stream {config.name}", replicas)
    await ensure_durables(js, run_id, run_consumers() if consumers is None else consumers)
    kv, objects = names.kv_bucket(run_id), names.object_bucket(run_id)
    await _keep_existing(js.create_object_store(bucket=objects, replicas=replicas), f"object store {objects}", replicas)
    await _keep_existing(js.add_stream(kv_stream_config(kv, replicas)), f"KV bucket {kv}", replicas)


def kv_stream_config(bucket: str, replicas: int) -> api.StreamConfig:
    """The run KV's stream as nats-py's create_key_value makes it, but refusing `Nats-Rollup`
    headers: with one, a service allowed to put only its own key would have the server purge
    every other key of the bucket (meshrl never rolls the KV up: deletes are markers, no purge)."""
    return api.StreamConfig(
        name=f"KV_{bucket}",
        subjects=[f"$KV.{bucket}.>"],
        allow_rollup_hdrs=False,
        allow_msg_ttl=True,
        deny_delete=True,
        discard=api.DiscardPolicy.NEW,
        duplicate_window=120.0,
        max_consumers=-1,
        max_msgs=-1,
        max_msgs_per_subject=KV_HISTORY,
        num_replicas=replicas,
    )
