"""An external reward service: what a product team writes to plug its own reward into meshrl.

It implements `meshrl.reward.v1.RewardService.Score` (protos/meshrl/reward/v1/reward.proto)
with a keyword/length scorer, plus the standard gRPC health service and reflection, which
meshrl checks at start-up. Any language works; this one uses Python and grpc.aio.

    score = (keywords found in the response) / (number of keywords)      [1.0 if none given]
            - min(1, max(0, chars - max_chars) / max_chars)              [when --max-chars > 0]

Case-insensitive substring match. Point a run at it with:

    reward:
      components:
        - {name: keywords, kind: external, address: "localhost:50070", weight: 0.5, timeout_s: 5}

Run:  python examples/external_reward/server.py --port 50070 --keywords answer,because --max-chars 400
"""
import argparse
import asyncio
import logging
import signal

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc


def keyword_length_score(response: str, keywords: list[str], max_chars: int) -> tuple[float, dict]:
    text = response.casefold()
    hits = sum(k.casefold() in text for k in keywords)
    coverage = hits / len(keywords) if keywords else 1.0
    over = max(0, len(response) - max_chars) / max_chars if max_chars > 0 else 0.0
    return coverage - min(1.0, over), {"keyword_hits": float(hits), "chars": float(len(response))}


class KeywordRewardService(reward_pb2_grpc.RewardServiceServicer):
    def __init__(self, keywords: list[str], max_chars: int):
        self.keywords, self.max_chars = keywords, max_chars

    async def Score(self, request: reward_pb2.ScoreRequest, context) -> reward_pb2.ScoreResponse:
        results = []
        for item in request.items:
            score, details = keyword_length_score(item.response, self.keywords, self.max_chars)
            results.append(reward_pb2.ScoreResult(
                id=item.id, score=score, status=common_pb2.SCORE_STATUS_OK, details=details))
        return reward_pb2.ScoreResponse(results=results)


async def serve(port: int, keywords: list[str], max_chars: int) -> None:
    server = grpc.aio.server()
    reward_pb2_grpc.add_RewardServiceServicer_to_server(KeywordRewardService(keywords, max_chars), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = (reward_pb2.DESCRIPTOR.services_by_name["RewardService"].full_name, health.SERVICE_NAME,
             reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server)
    bound = server.add_insecure_port(f"[::]:{port}")
    await server.start()
    for name in ("", names[0]):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    logging.info("keyword reward service on port %d (keywords=%s, max_chars=%d)", bound, keywords, max_chars)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(grace=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--keywords", default="", help="comma-separated, e.g. answer,because")
    parser.add_argument("--max-chars", type=int, default=0, help="0 = no length penalty")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    keywords = [k.strip() for k in args.keywords.split(",") if k.strip()]
    asyncio.run(serve(args.port, keywords, args.max_chars))


if __name__ == "__main__":
    main()
