"""The mesh's topology, written once: the pipeline's stages (who publishes each, which kind pulls
it, the message it carries) and the service kinds (the gRPC port a cluster gives each, its gRPC
service and who calls it, whether it scales and is watched, the secrets it is issued).
Everything that names a stage or a kind reads it: the bus's subjects and NATS permissions, the
workers, `meshrl serve`, `meshrl scale`, `meshrl status`, the launcher's certificates, the gRPC
authorisation, the learner's health watch, the Kubernetes TLS Secrets;
tests/deploy/test_topology.py holds the compose and Kubernetes files to it.

    learner -prompts-> rollout -generated-> reward -scored-> reference -ready-> learner
                                            reward -ready-> learner   (a run without reference)

    from meshrl import topology
    topology.consumed_stage("reward")                            # "generated"
    topology.output_stage("reward", reference_enabled=False)     # "ready"
    topology.KINDS["reward_model"].grpc_port                     # 50055 in compose and Kubernetes

A stage's durable pull consumer is named after the kind that pulls it. A new service kind is
one row of KIND_TABLE (then tests/deploy/test_topology.py names every deploy file it still lacks).

Simplification: plain data importing nothing, so every floor may read it; what a kind may do
beyond its stages (the learner creating streams, rollout reading the weights) stays with the
NATS permissions (transport/bus/subjects.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    name: str  # the subject's last token: meshrl.<run>.<name>
    message: str  # the meshrl.common.v1 message it carries
    producers: tuple[str, ...]  # the kinds that publish it
    consumer: str  # the kind whose durable (named after it) pulls it
    max_deliver: int = 5  # deliveries before a message goes to the dead letters
    ack_wait_s: float = 30.0  # the default; the consuming kind's config may set its own


STAGE_TABLE = (
    Stage("prompts", "PromptTask", ("learner",), "rollout", max_deliver=10),
    Stage("generated", "Group", ("rollout",), "reward"),
    Stage("scored", "Group", ("reward",), "reference"),
    # A training step may gather for minutes before it acks what it pulled.
    Stage("ready", "Group", ("reward", "reference"), "learner", ack_wait_s=300.0),
)

# What a kind's pods are issued: its NATS user's credentials, a certificate (NATS client and
# mesh gRPC, both ways), the key that signs checkpoints.
NATS_USER, TLS, CHECKPOINT_KEY = "nats-user", "tls", "checkpoint-key"
SERVICE_SECRETS = (NATS_USER, TLS)


@dataclass(frozen=True)
class Kind:
    name: str
    grpc_port: int  # where compose and Kubernetes serve it; a one-host run picks free ports
    grpc_service: str  # the service its gRPC server offers (protos/), besides health and reflection
    callers: tuple[str, ...]  # the kinds that call it (admin may too): gRPC authorisation, NetworkPolicies
    scalable: bool = True  # replicas come and go (`meshrl scale`, HPA/KEDA)
    watched: bool = True  # probed by the learner's health watch
    secrets: tuple[str, ...] = SERVICE_SECRETS

    @property
    def dns_name(self) -> str:
        """Its name where a DNS label is needed (Kubernetes objects, compose services)."""
        return self.name.replace("_", "-")


KIND_TABLE = (
    # The learner watches the others; its torchrun ranks are fixed for a run (learner.ranks).
    Kind(
        "learner",
        50054,
        "meshrl.learner.v1.LearnerControlService",
        callers=(),  # the operator's tools only
        scalable=False,
        watched=False,
        secrets=(*SERVICE_SECRETS, CHECKPOINT_KEY),
    ),
    Kind("rollout", 50051, "meshrl.rollout.v1.RolloutService", callers=("learner",)),  # evaluation
    Kind("reward", 50052, "meshrl.reward.v1.RewardService", callers=("learner",)),  # evaluation
    Kind("reference", 50053, "meshrl.reference.v1.ReferenceService", callers=("learner",)),  # DPO, KL
    Kind("reward_model", 50055, "meshrl.reward.v1.RewardService", callers=("reward",)),  # on no stage
    Kind("environment", 50056, "meshrl.env.v1.EnvironmentService", callers=("rollout",)),  # on no stage
)
KINDS = {kind.name: kind for kind in KIND_TABLE}
STAGES = {stage.name: stage for stage in STAGE_TABLE}
# The operator's tools (launcher, `meshrl status`, the gateway): a NATS user and a certificate, no service.
ADMIN = "admin"
METRICS_PORT = 9464  # every pod's /metrics in compose and Kubernetes


def kind(name: str) -> Kind:
    if name not in KINDS:
        raise ValueError(f"unknown service kind {name!r}: allowed are {', '.join(KINDS)}")
    return KINDS[name]


def stage(name: str) -> Stage:
    if name not in STAGES:
        raise ValueError(f"unknown stage {name!r}: allowed stages are {', '.join(STAGES)}")
    return STAGES[name]


def consumed_stage(kind_name: str) -> str | None:
    """The stage `kind_name` pulls (None for a kind called over gRPC only)."""
    kind(kind_name)
    return next((s.name for s in STAGE_TABLE if s.consumer == kind_name), None)


def output_stage(kind_name: str, *, reference_enabled: bool = True) -> str | None:
    """The stage `kind_name` publishes: the first it may produce whose consumer runs (a run
    without a reference model has no reference replicas, so reward publishes `ready`)."""
    kind(kind_name)
    running = set(KINDS) - ({"reference"} if not reference_enabled else set())
    return next((s.name for s in STAGE_TABLE if kind_name in s.producers and s.consumer in running), None)


def scalable() -> tuple[str, ...]:
    return tuple(k.name for k in KIND_TABLE if k.scalable)


def watched() -> tuple[str, ...]:
    return tuple(k.name for k in KIND_TABLE if k.watched)


def holders(secret: str) -> tuple[str, ...]:
    """Every identity issued `secret`: the kinds whose row names it, and admin for a NATS user or
    a certificate (the operator's tools log in and call like a service)."""
    kinds = tuple(k.name for k in KIND_TABLE if secret in k.secrets)
    return (*kinds, ADMIN) if secret in SERVICE_SECRETS else kinds
