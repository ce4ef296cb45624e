"""`meshrl reward check` against a real gRPC server (written in the test) whose Score answers
bytes that are no ScoreResponse: every call's row FAILs naming the bytes, with a fix; the kit
never raises.

Run: .venv/bin/python -m pytest tests/services/cli/reward_check/test_garbage_answer.py
"""

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from meshrl.api.reward.v1 import reward_pb2
from meshrl.cli.reward_check import run_suite

GARBAGE = b"\xff\xff\xff\xff not a protobuf"


async def garbage_score(request, context):
    return GARBAGE


async def test_an_answer_that_is_no_protobuf_is_a_fail_row():
    server = grpc.aio.server()
    handler = grpc.unary_unary_rpc_method_handler(
        garbage_score, request_deserializer=reward_pb2.ScoreRequest.FromString, response_serializer=lambda b: b
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("meshrl.reward.v1.RewardService", {"Score": handler}),)
    )
    checker = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(checker, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    await checker.set("", health_pb2.HealthCheckResponse.SERVING)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            rows = {r.check: r for r in await run_suite(channel, timeout_s=10.0)}
    finally:
        await server.stop(0)
    basic = rows["basic batch"]
    assert (
        basic.outcome == "FAIL"
        and f"INVALID_ANSWER: answered {len(GARBAGE)} bytes that are no ScoreResponse" in basic.detail
    )
    assert "serialized ScoreResponse" in basic.fix
    assert rows["concurrent calls (8 x 25 items)"].outcome == "FAIL"
