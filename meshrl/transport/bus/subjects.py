"""Names of every NATS subject, stream, bucket and durable consumer a run uses, and who may use each.

A run id becomes one subject token and part of stream/bucket names: characters outside
`[A-Za-z0-9_-]` (dots, spaces, wildcards) are replaced by `_`, so `exp.1` and `exp_1`
share a namespace; pick run ids that differ in letters or digits. Case is kept.

    meshrl.<run>.prompts | generated | scored | ready   work queues (one stream each)
    meshrl.<run>.dead                                   dead letters
    meshrl.<run>.events, meshrl.<run>.weights.loaded    events (one stream)

Who may use them (the second half of this module): one NATS user per service kind, its
permissions generated from the run id.

    perms = run_permissions("exp-1", reference_enabled=True)
    perms["rollout"].publish    # ("$JS.API.INFO", "meshrl.exp-1.generated", ...)

What each kind really does (grep the services for bus.publish / state.put / weights):

- rollout: consumes `prompts` (durable "rollout"), publishes `generated`, reads the weights
  notice and the weights object store, publishes `weights.loaded` acks;
- reward: consumes `generated` (durable "reward"), publishes `scored` (or `ready` when the
  run has no reference);
- reference: consumes `scored` (durable "reference"), publishes `ready`;
- reward_model (a run's learned reward model, called over gRPC by reward) and environment
  (a run's built-in environment replicas, called over gRPC by rollout): no stage, only the
  common part below (announce their address and metrics URL);
- learner: creates the run's streams, publishes `prompts` and events (alerts), pulls
  `ready` (durable "learner"), writes the whole run KV (the weights notice, the run state)
  and the weights object store, listens to `weights.loaded`;
- admin (the launcher, `meshrl status`): everything.
Every kind reads the run KV, writes only its own `services.<kind>.*` / `metrics.<kind>.*`
keys (registry.py, service_metrics.py), may dead-letter what it consumes, and receives
replies on its own inbox prefix only (`_INBOX_<user>`), so no service reads another's replies.

The server publishes on a client's behalf too, and checks none of these permissions when it
does: a consumer delivers to whatever `deliver_subject` its creator set. So only the learner
(and admin) may create consumers (it makes every stage's durable: `run_consumers`); the other
kinds look their durable up, fetch and ack; they read the run KV by message get and watch a
key by subscribing to its subject (kv.py), and rollout reads the weights by direct get
(objects.py): none of them creates a consumer. A request's reply subject is the other way
the server publishes for a client: each service kind has a NATS account of its own that
imports exactly these subjects from the run's (accounts.py), so an answer aimed at a run
subject or KV key stays in the requester's account; what might land anyway is refused by
the consumers (origin.py) and the KV's readers (entries.py). `$JS.API.INFO` stays granted
(and imported): nats-server gives an account without JetStream of its own a `$JS.API.>`
import of the system's "JetStream not enabled for account" answers unless that account
imports `$JS.API.INFO` from elsewhere, and those answers would race the run account's for
every other call; the client also checks JetStream with it when it connects. Its answer
says nothing of the streams' contents.

The run's four work-queue consumers (`run_consumers`) are made by whoever creates the
streams (the learner, the launcher), never by the services that bind to them:

    specs = run_consumers(cfg.ack_waits)
    await ensure_run_streams(js, run_id, consumers=specs)   # streams, then these, then the KV

Why the services do not create their own: creating a consumer lets the creator set its
`deliver_subject`, and the server then publishes every message of the stream there on its
own behalf, whatever the creator may publish (nats-server checks no permission on it). A
service that may create its durable could make it a push consumer delivering into `ready`
or the learner's `weights.loaded`. So a service's NATS user may only look its durable up,
fetch from it and ack (above); the pull durables exist before the run KV does, and
services wait for the run KV (run_wait.py). A pull durable cannot be updated into a push
one (the server refuses), so an existing durable stays safe.

ack_wait and max_deliver are the server's: a worker reads them back from its durable.

Which kind consumes and publishes which stage comes from meshrl/topology.py, as the workers'
own constants do; tests/unit/transport/bus/test_permissions_policy.py checks the two agree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from meshrl import topology

STAGES = tuple(topology.STAGES)
# Run-state KV key holding the latest common.v1.WeightsNotice (learner puts, replicas watch).
WEIGHTS_NOTICE_KEY = "weights_notice"
# Run-state KV key holding the run's current weights version, {"version": V, "step": S}: the
# learner puts it BEFORE each notice; a replica loads only the notice of that version.
RUN_VERSION_KEY = "run_version"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


# The run's work-queue consumers (module docstring): one durable pull consumer per stage.
@dataclass(frozen=True)
class ConsumerSpec:
    durable: str
    ack_wait: float = 60.0
    max_deliver: int = 5
    max_ack_pending: int = 1000

    def config(self):
        """The nats-py ConsumerConfig of this durable pull consumer (explicit acks, all messages)."""
        from nats.js import api  # lazy: this module is pure Python, imported by the CLI without nats

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


def run_consumers(ack_waits: Mapping[str, float] | None = None) -> dict[str, ConsumerSpec]:
    """stage -> the durable pull consumer on it (its name is the consuming service kind).
    `ack_waits`: consuming kind -> seconds (RunConfig.ack_waits); the topology's default if not given.
    Their services send heartbeats, so the wait is only what a dead replica's work is lost for."""
    waits = dict(ack_waits or {})
    return {
        s.name: ConsumerSpec(s.consumer, ack_wait=waits.get(s.consumer, s.ack_wait_s), max_deliver=s.max_deliver)
        for s in topology.STAGE_TABLE
    }


def durable_of(stage: str) -> str:
    return run_consumers()[stage].durable


def run_token(run_id: str) -> str:
    """The run id as one safe NATS token / stream-name fragment."""
    if not run_id:
        raise ValueError("run id is empty: pass the run's name (e.g. cfg.run.name)")
    return _UNSAFE.sub("_", run_id)


def check_stage(stage: str) -> str:
    return topology.stage(stage).name


def stage_subject(run_id: str, stage: str) -> str:
    return f"meshrl.{run_token(run_id)}.{check_stage(stage)}"


def stage_stream(run_id: str, stage: str) -> str:
    return f"MESHRL_{run_token(run_id)}_{check_stage(stage).upper()}"


def dead_subject(run_id: str) -> str:
    return f"meshrl.{run_token(run_id)}.dead"


def dead_stream(run_id: str) -> str:
    return f"MESHRL_{run_token(run_id)}_DEAD"


def events_subject(run_id: str) -> str:
    return f"meshrl.{run_token(run_id)}.events"


def weights_loaded_subject(run_id: str) -> str:
    return f"meshrl.{run_token(run_id)}.weights.loaded"


def events_stream(run_id: str) -> str:
    return f"MESHRL_{run_token(run_id)}_EVENTS"


def kv_bucket(run_id: str) -> str:
    return f"meshrl_{run_token(run_id)}_state"


def object_bucket(run_id: str) -> str:
    return f"meshrl_{run_token(run_id)}_weights"


def shm_prefix(run_id: str) -> str:
    """Every file or dir a run keeps in /dev/shm starts with this (weights, staging, fetches),
    so whoever outlives the run's processes can free that memory."""
    return f"meshrl-{run_id}"


def weights_object_name(version: int) -> str:
    """Object-store name of one weights version; zero-padded so names sort by version."""
    return f"weights-v{version:010d}.safetensors"


KINDS = tuple(topology.KINDS)
ADMIN = topology.ADMIN
CONSUMER_CREATORS = ("learner", ADMIN)  # the users that may create consumers (see above)
# kind -> (stage it consumes, durable name); its output stage is topology.output_stage.
CONSUMES = {s.consumer: (s.name, durable_of(s.name)) for s in topology.STAGE_TABLE}


@dataclass(frozen=True)
class Permissions:
    publish: tuple[str, ...]
    subscribe: tuple[str, ...]


def inbox_prefix(user: str) -> str:
    """The reply-subject prefix a user's client must use (the only inbox it may subscribe to)."""
    return f"_INBOX_{user}"


def consumer_api(stream: str, durable: str) -> list[str]:
    """Bind to one existing durable pull consumer, fetch, ack, nak, term (and nothing else)."""
    api = "$JS.API.CONSUMER"
    return [f"{api}.INFO.{stream}.{durable}", f"{api}.MSG.NEXT.{stream}.{durable}", f"$JS.ACK.{stream}.{durable}.>"]


def create_durable_api(stream: str, durable: str) -> list[str]:
    """Create (or update) the durable `durable` on `stream`: the learner's, for every stage."""
    api = "$JS.API.CONSUMER"
    return [
        f"{api}.CREATE.{stream}.{durable}",
        f"{api}.CREATE.{stream}.{durable}.>",
        f"{api}.DURABLE.CREATE.{stream}.{durable}",
    ]


def reader_api(stream: str) -> list[str]:
    """Read a KV bucket / object store by message get: no consumer, so no deliver_subject."""
    return [f"$JS.API.STREAM.INFO.{stream}", f"$JS.API.STREAM.MSG.GET.{stream}"]


def consumer_reader_api(stream: str) -> list[str]:
    """Read with ephemeral ordered consumers (listing keys or objects): the learner only."""
    api = "$JS.API"
    return [
        *reader_api(stream),
        f"{api}.CONSUMER.CREATE.{stream}",
        f"{api}.CONSUMER.CREATE.{stream}.>",
        f"{api}.CONSUMER.INFO.{stream}.>",
        f"{api}.CONSUMER.MSG.NEXT.{stream}.>",
        f"{api}.CONSUMER.DELETE.{stream}.>",
        f"$JS.FC.{stream}.>",
    ]


def kv_stream(run_id: str) -> str:
    return f"KV_{kv_bucket(run_id)}"


def object_stream(run_id: str) -> str:
    return f"OBJ_{object_bucket(run_id)}"


def _consumer(run_id: str, kind: str) -> Permissions:
    """A kind's input queue: its durable, dead letters, and the exhausted-delivery advisory."""
    stage, durable = CONSUMES[kind]
    stream = stage_stream(run_id, stage)
    cleanup = [f"$JS.API.STREAM.MSG.GET.{stream}", f"$JS.API.STREAM.MSG.DELETE.{stream}"]
    return Permissions(
        publish=(*consumer_api(stream, durable), *cleanup, dead_subject(run_id)),
        subscribe=(f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{stream}.{durable}",),
    )


def _common(run_id: str, kind: str) -> Permissions:
    """What every kind does: JetStream account check, read the run KV (get; watch a key by
    its subject), write its own KV keys."""
    bucket = kv_bucket(run_id)
    own_keys = [f"$KV.{bucket}.services.{kind}.>", f"$KV.{bucket}.metrics.{kind}.>"]
    return Permissions(
        publish=("$JS.API.INFO", *reader_api(kv_stream(run_id)), *own_keys),
        subscribe=(f"{inbox_prefix(kind)}.>", f"$KV.{bucket}.>"),
    )


def _learner_extra(run_id: str) -> Permissions:
    """Only the learner: create the run's streams and durables, write the weights, the whole
    KV, events; list keys and objects."""
    streams = [stage_stream(run_id, s) for s in STAGES]
    streams += [dead_stream(run_id), events_stream(run_id), kv_stream(run_id), object_stream(run_id)]
    manage = [f"$JS.API.STREAM.{op}.{s}" for s in streams for op in ("CREATE", "INFO")]
    durables = [api for stage in STAGES for api in create_durable_api(stage_stream(run_id, stage), durable_of(stage))]
    # STREAM.NAMES: nats-py's object-store listing (the learner prunes old versions) looks
    # its stream up by subject; it reveals stream names, nothing of their contents.
    objects = [
        *consumer_reader_api(object_stream(run_id)),
        f"$JS.API.STREAM.PURGE.{object_stream(run_id)}",
        f"$O.{object_bucket(run_id)}.>",
        "$JS.API.STREAM.NAMES",
    ]
    return Permissions(
        publish=(
            *manage,
            *durables,
            *consumer_reader_api(kv_stream(run_id)),
            *objects,
            f"$KV.{kv_bucket(run_id)}.>",
            events_subject(run_id),
        ),
        subscribe=(weights_loaded_subject(run_id),),
    )


def _rollout_extra(run_id: str) -> Permissions:
    """Only rollout: read the weights object store (info by message get, chunks by direct
    get), ack a load on `weights.loaded`."""
    stream = object_stream(run_id)
    return Permissions(
        publish=(*reader_api(stream), f"$JS.API.DIRECT.GET.{stream}", weights_loaded_subject(run_id)),
        subscribe=(),
    )


def _merge(*parts: Permissions) -> Permissions:
    def unique(items):
        return tuple(dict.fromkeys(items))

    return Permissions(
        publish=unique(s for p in parts for s in p.publish), subscribe=unique(s for p in parts for s in p.subscribe)
    )


def kind_permissions(run_id: str, kind: str, *, reference_enabled: bool = True) -> Permissions:
    """Exactly the subjects one service kind publishes and subscribes to in run `run_id`."""
    topology.kind(kind)  # refuses an unknown one, naming the allowed
    output = topology.output_stage(kind, reference_enabled=reference_enabled)
    parts = [_common(run_id, kind)]
    if kind in CONSUMES:  # reward_model and environment serve gRPC only: no queue in, no stage out
        parts += [_consumer(run_id, kind), Permissions(publish=(stage_subject(run_id, output),), subscribe=())]
    if kind == "learner":
        parts.append(_learner_extra(run_id))
    if kind == "rollout":
        parts.append(_rollout_extra(run_id))
    return _merge(*parts)


def admin_permissions() -> Permissions:
    """The launcher and the operator's tools (status, scale): the whole server."""
    return Permissions(publish=(">",), subscribe=(">",))


def run_permissions(run_id: str, *, reference_enabled: bool = True) -> dict[str, Permissions]:
    """user name -> permissions: one user per service kind, plus `admin`."""
    users = {kind: kind_permissions(run_id, kind, reference_enabled=reference_enabled) for kind in KINDS}
    users[ADMIN] = admin_permissions()
    return users
