"""Serve `RewardService.Score` (see servicer) with gRPC health and reflection (meshrl.transport.rpc).

`start_reward_server(scorer, port)` → (server, bound port); port 0 picks a free one.
Stop with `meshrl.transport.rpc.stop_server(server, grace)`.
"""

import grpc

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.servicer import RewardServicer
from meshrl.transport.rpc import registration, start_server

SERVICE = reward_pb2.DESCRIPTOR.services_by_name["RewardService"]


async def start_reward_server(
    scorer: GroupScorer, port: int = 0, host: str | None = None
) -> tuple[grpc.aio.Server, int]:
    reg = registration(reward_pb2_grpc.add_RewardServiceServicer_to_server, RewardServicer(scorer), SERVICE)
    return await start_server([reg], port=port, host=host)
