"""The run's four work-queue consumers, made by whoever creates the streams (the learner, the
launcher), never by the services that bind to them.

    specs = run_consumers(rollout_ack_wait_s=cfg.rollout.ack_wait_s)
    await ensure_run_streams(js, run_id, consumers=specs)   # streams, then these, then the KV

Why the services do not create their own: creating a consumer lets the creator set its
`deliver_subject`, and the server then publishes every message of the stream there on its
own behalf, whatever the creator may publish (nats-server checks no permission on it). A
service that may create its durable could make it a push consumer delivering into `ready`
or the learner's `weights.loaded`. So a service's NATS user may only look its durable up,
fetch from it and ack (subjects.py); the pull durables exist before the run KV does, and
services wait for the run KV (run_wait.py). A pull durable cannot be updated into a push
one (the server refuses), so an existing durable stays safe.

ack_wait and max_deliver are the server's: a worker reads them back from its durable.
"""

from __future__ import annotations

from dataclasses import dataclass

ROLLOUT_ACK_WAIT_S = 30.0  # config.rollout.ack_wait_s's default


@dataclass(frozen=True)
class ConsumerSpec:
    durable: str
    ack_wait: float = 60.0
    max_deliver: int = 5
    max_ack_pending: int = 1000

    def config(self):
        """The nats-py ConsumerConfig of this durable pull consumer (explicit acks, all messages)."""
        from nats.js import api  # lazy: subjects.py (pure Python, imported by the CLI) reads this module

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


def run_consumers(rollout_ack_wait_s: float = ROLLOUT_ACK_WAIT_S) -> dict[str, ConsumerSpec]:
    """stage -> the durable pull consumer on it (its name is the consuming service kind)."""
    return {
        "prompts": ConsumerSpec("rollout", ack_wait=rollout_ack_wait_s, max_deliver=10),
        "generated": ConsumerSpec("reward", ack_wait=60.0, max_deliver=5),  # heartbeats keep scoring alive
        "scored": ConsumerSpec("reference", ack_wait=60.0, max_deliver=5),
        "ready": ConsumerSpec("learner", ack_wait=300.0, max_deliver=5),
    }


def durable_of(stage: str) -> str:
    return run_consumers()[stage].durable
