"""Serve `RewardService.Score` (see servicer) with gRPC health and reflection.

`start_reward_server(scorer, port)` → (server, bound port); port 0 picks a free one.
"""
import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from meshrl.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.servicer import RewardServicer

SERVICE_NAME = reward_pb2.DESCRIPTOR.services_by_name["RewardService"].full_name


async def start_reward_server(scorer: GroupScorer, port: int = 0, host: str = "[::]") -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    reward_pb2_grpc.add_RewardServiceServicer_to_server(RewardServicer(scorer), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    await server.start()
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return server, bound
