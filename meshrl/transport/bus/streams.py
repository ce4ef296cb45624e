"""Create a run's streams and buckets, idempotently (several services may race here).

- one work-queue stream per stage (a message lives until a consumer acks it), with a
  duplicate window so a republished group id is stored once;
- a dead-letter stream and an events stream (limits retention: kept for inspection);
- the run-state KV bucket and the weights object store.
Creating with an identical config is a no-op on the server; if a stream already exists
with a different config, the existing one is kept (the first service to start wins).
"""
from nats.js import api
from nats.js.errors import BadRequestError

from meshrl.transport.bus import subjects as names

DUPLICATE_WINDOW_S = 20 * 60
EVENTS_MAX_AGE_S = 7 * 24 * 3600
KV_HISTORY = 8
STREAM_IN_USE = 10058  # "stream name already in use with a different configuration"


def work_stream_config(run_id: str, stage: str) -> api.StreamConfig:
    return api.StreamConfig(
        name=names.stage_stream(run_id, stage),
        subjects=[names.stage_subject(run_id, stage)],
        retention=api.RetentionPolicy.WORK_QUEUE,
        storage=api.StorageType.FILE,
        duplicate_window=DUPLICATE_WINDOW_S,
    )


def limits_stream_config(name: str, subjects: list[str]) -> api.StreamConfig:
    return api.StreamConfig(
        name=name,
        subjects=subjects,
        retention=api.RetentionPolicy.LIMITS,
        storage=api.StorageType.FILE,
        max_age=EVENTS_MAX_AGE_S,
        duplicate_window=120,
    )


def run_stream_configs(run_id: str) -> list[api.StreamConfig]:
    configs = [work_stream_config(run_id, stage) for stage in names.STAGES]
    configs.append(limits_stream_config(names.dead_stream(run_id), [names.dead_subject(run_id)]))
    configs.append(limits_stream_config(
        names.events_stream(run_id), [names.events_subject(run_id), names.weights_loaded_subject(run_id)]))
    return configs


async def _keep_existing(create) -> None:
    """Await `create`; a stream that exists with another config is kept as it is."""
    try:
        await create
    except BadRequestError as err:
        if err.err_code != STREAM_IN_USE:
            raise


async def ensure_run_streams(js, run_id: str) -> None:
    """All of a run's streams, the KV bucket and the object store exist after this."""
    for config in run_stream_configs(run_id):
        await _keep_existing(js.add_stream(config))
    await _keep_existing(js.create_key_value(bucket=names.kv_bucket(run_id), history=KV_HISTORY))
    await _keep_existing(js.create_object_store(bucket=names.object_bucket(run_id)))
