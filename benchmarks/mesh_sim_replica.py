"""One simulated replica of benchmarks/mesh_sim.py: a rollout with a FakeEngine, or a reward.

    .venv/bin/python -m benchmarks.mesh_sim_replica rollout NATS_URL RUN_ID rollout-3 --gen-ms 50
    .venv/bin/python -m benchmarks.mesh_sim_replica reward NATS_URL RUN_ID reward-1

The rollout replica is the real RolloutWorker (prompts → generated, its durable, its
in-progress heartbeats, its publish with msg_id = group id) driving a FakeEngine: a stand-in
for vLLM, named so and used only in this benchmark, that returns canned token ids after
`--gen-ms` of sleep (a set rate: `concurrency` groups per gen-ms per replica). The reward
replica is the real RewardWorker with the real `exact_match` rule (generated → ready; no
reference in the simulation). Each runs until killed (mesh_sim kills them with SIGKILL).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.config.schema import RewardComponentConfig
from meshrl.services.reward.components import build_components
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.worker import DURABLE as REWARD_DURABLE
from meshrl.services.reward.worker import IN_STAGE as REWARD_IN
from meshrl.services.reward.worker import RewardWorker
from meshrl.services.rollout.worker import RolloutWorker
from meshrl.transport.bus import Bus
from meshrl.transport.bus.codec import pack_float32, pack_int32

CANNED_TOKENS = list(range(100, 132))  # 32 response tokens per sample
CANNED_ANSWER = "42"  # matches the feeder's ground truth for even draws: rewards vary 0/1


@dataclass
class FakeConfig:
    replica_id: str


class FakeEngine:
    """FAKE engine (simulation only): canned token ids after a fixed delay, no model."""

    def __init__(self, replica_id: str, gen_s: float):
        self.config, self.gen_s, self.version = FakeConfig(replica_id), gen_s, 0

    def _sample(self, index: int) -> pb.Sample:
        return pb.Sample(
            index=index,
            response_token_ids=pack_int32(CANNED_TOKENS),
            behaviour_logprobs=pack_float32([-0.5] * len(CANNED_TOKENS)),
            response_text=CANNED_ANSWER,
            finish_reason=pb.FINISH_REASON_STOP,
            policy_version=self.version,
        )

    async def generate_group(self, task: pb.PromptTask) -> pb.Group:
        start = time.time()
        await asyncio.sleep(self.gen_s)  # the "engine" at its set rate
        samples = [self._sample(i) for i in range(task.sampling.n or 1)]
        timing = pb.StageTiming(
            stage="generate", service=self.config.replica_id, start_unix=start, end_unix=time.time()
        )
        return pb.Group(
            run_id=task.run_id,
            group_id=task.group_id,
            task=task,
            samples=samples,
            policy_version=self.version,
            rollout_replica=self.config.replica_id,
            timings=[timing],
        )


async def run_rollout(bus: Bus, replica_id: str, args) -> None:
    worker = RolloutWorker(bus, FakeEngine(replica_id, args.gen_ms / 1000.0))
    await worker.run(concurrency=args.concurrency, ack_wait=args.ack_wait, max_deliver=10, backoff=(1.0,))


async def run_reward(bus: Bus, replica_id: str, args) -> None:
    scorer = GroupScorer(build_components([RewardComponentConfig(name="exact", kind="exact_match")]))
    worker = RewardWorker(bus, scorer, reference_enabled=False, replica_id=replica_id)
    await bus.worker(
        REWARD_IN,
        REWARD_DURABLE,
        worker.handle,
        batch=args.concurrency,
        concurrency=args.concurrency,
        ack_wait=args.ack_wait,
        max_deliver=10,
        backoff=(1.0,),
    )


async def main(args) -> None:
    bus = await Bus.connect(args.url, args.run_id, name=args.replica_id)
    role = run_rollout if args.role == "rollout" else run_reward
    await role(bus, args.replica_id, args)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("role", choices=["rollout", "reward"])
    p.add_argument("url")
    p.add_argument("run_id")
    p.add_argument("replica_id")
    p.add_argument("--gen-ms", type=float, default=50.0, help="FakeEngine time per group")
    p.add_argument("--concurrency", type=int, default=16, help="groups handled at once")
    p.add_argument("--ack-wait", type=float, default=6.0, help="s before a dead replica's work is redelivered")
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
