"""ReferenceService over a real gRPC port: same numbers as the scorer, health, reflection,
and INVALID_ARGUMENT for ids the model does not have."""

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from meshrl.api.reference.v1 import reference_pb2, reference_pb2_grpc
from meshrl.services.reference.servicer import SERVICE_NAME, start_reference_server
from meshrl.transport.bus.codec import pack_int32, unpack_float32


@pytest.fixture
async def channel(tiny_scorer):
    server, port = await start_reference_server(tiny_scorer, 0, host="127.0.0.1")
    assert port > 0
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        yield ch
    await server.stop(grace=0)


def request_for(prompts, responses):
    return reference_pb2.ComputeLogprobsRequest(
        sequences=[
            reference_pb2.TokenSequence(id=f"s{i}", prompt_token_ids=pack_int32(p), response_token_ids=pack_int32(r))
            for i, (p, r) in enumerate(zip(prompts, responses))
        ]
    )


async def test_compute_logprobs_returns_the_scorers_numbers(channel, tiny_scorer):
    rng = np.random.default_rng(3)
    prompts = [rng.integers(5, 90, n) for n in (4, 7, 2, 5)]
    responses = [rng.integers(5, 90, n) for n in (3, 6, 1, 0)]
    stub = reference_pb2_grpc.ReferenceServiceStub(channel)
    reply = await stub.ComputeLogprobs(request_for(prompts, responses), timeout=30)
    expected = tiny_scorer.score(prompts, responses)
    assert [r.id for r in reply.results] == ["s0", "s1", "s2", "s3"]
    for result, want in zip(reply.results, expected):
        got = unpack_float32(result.logprobs)
        np.testing.assert_array_equal(got, want)
        assert result.sum_logprob == pytest.approx(float(want.astype(np.float64).sum()), abs=1e-9)
        assert np.all(got <= 0)
    assert [len(unpack_float32(r.logprobs)) for r in reply.results] == [3, 6, 1, 0]


async def test_out_of_vocab_is_invalid_argument(channel, tiny_scorer):
    stub = reference_pb2_grpc.ReferenceServiceStub(channel)
    bad = request_for([np.array([1, 2])], [np.array([tiny_scorer.vocab_size])])
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ComputeLogprobs(bad, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "token ids must lie in" in info.value.details()


async def test_health_and_reflection(channel):
    health = health_pb2_grpc.HealthStub(channel)
    for name in ("", SERVICE_NAME):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    refl = reflection_pb2_grpc.ServerReflectionStub(channel)
    responses = refl.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
    names = [s.name async for r in responses for s in r.list_services_response.service]
    assert SERVICE_NAME in names and "grpc.health.v1.Health" in names


async def test_the_learner_ld_weights_the_reference_tokens(tiny_scorer):
    """LD-DPO on the offline path: the learner's client asks for per-token log-probs over the
    real port and weights the tail beyond each pair's shared length by α (by hand here)."""
    from types import SimpleNamespace

    from meshrl.services.learner.offline import OfflineLearner
    from meshrl.services.learner.reference_client import ReferenceClient

    server, port = await start_reference_server(tiny_scorer, 0, host="127.0.0.1")
    client = ReferenceClient(f"127.0.0.1:{port}", timeout_s=30)
    cfg = SimpleNamespace(algorithm=SimpleNamespace(dpo_ld_alpha=0.25))
    learner = OfflineLearner(
        cfg=cfg, pairs=None, dpo_step=None, reference=client, logger=None, state=None, pad_id=0, checkpoints=None
    )
    rng = np.random.default_rng(5)
    prompts = [rng.integers(5, 90, 3), rng.integers(5, 90, 4)] * 2
    responses = [rng.integers(5, 90, n) for n in (5, 2, 3, 4)]  # chosen 5, 2; rejected 3, 4
    try:
        got = await learner.reference_sums(prompts, responses)
    finally:
        await client.close()
        await server.stop(grace=0)
    tokens = [t.astype(np.float64) for t in tiny_scorer.score(prompts, responses)]
    expected = [
        tokens[0][:3].sum() + 0.25 * tokens[0][3:].sum(),
        tokens[1].sum(),
        tokens[2].sum(),
        tokens[3][:2].sum() + 0.25 * tokens[3][2:].sum(),
    ]
    np.testing.assert_allclose(got, expected, rtol=1e-5)
