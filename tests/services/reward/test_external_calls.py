"""The external call path (services/reward/calls.py) against real grpc.aio servers on real
ports: retries on retryable codes only, the circuit breaker, recovery after a restart,
batching, the concurrency limit, the cache and the per-service metrics.

`ScriptedService` is a test reward service: it answers each call with the next code of its
script (then OK forever), scores an item len(response), and records every call's size."""

import asyncio

import grpc
import pytest

from meshrl.addresses import free_port
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.config.schema import RewardComponentConfig
from meshrl.services.reward.call_metrics import CallMetrics
from meshrl.services.reward.external import ExternalComponent
from meshrl.services.reward.types import RewardItem, Status
from meshrl.telemetry.metrics import start_metrics

ITEMS = [RewardItem(id=f"g/{i}", response="x" * (i + 1), prompt="p") for i in range(5)]
FAST = {"initial_backoff_s": 0.01, "max_backoff_s": 0.02}


class ScriptedService(reward_pb2_grpc.RewardServiceServicer):
    def __init__(self, script=(), hold_s: float = 0.0):
        self.script, self.hold_s = list(script), hold_s
        self.sizes: list[int] = []
        self.in_flight = self.max_in_flight = 0

    async def Score(self, request, context):
        self.sizes.append(len(request.items))
        if self.script:
            await context.abort(self.script.pop(0), "scripted failure")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(self.hold_s)
        self.in_flight -= 1
        return reward_pb2.ScoreResponse(
            results=[
                reward_pb2.ScoreResult(id=it.id, score=float(len(it.response)), status=reward_pb2.SCORE_STATUS_OK)
                for it in request.items
            ]
        )


async def serve(service, port: int = 0):
    server = grpc.aio.server()
    reward_pb2_grpc.add_RewardServiceServicer_to_server(service, server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server, f"127.0.0.1:{bound}"


def component(address: str, **cfg) -> ExternalComponent:
    cfg = RewardComponentConfig(name="judge", kind="external", address=address, **cfg)
    return ExternalComponent.from_config(cfg, run_id="r1")


@pytest.mark.parametrize(
    ("code", "calls", "status"),
    [
        (grpc.StatusCode.UNAVAILABLE, 3, Status.OK),  # 2 failures, retried, 3rd answers
        (grpc.StatusCode.RESOURCE_EXHAUSTED, 3, Status.OK),
        (grpc.StatusCode.INVALID_ARGUMENT, 1, Status.ERROR),  # not retryable: fails at once
        (grpc.StatusCode.INTERNAL, 1, Status.ERROR),
    ],
)
async def test_only_retryable_codes_are_retried(code, calls, status):
    service = ScriptedService([code, code])
    server, address = await serve(service)
    comp = component(address, retry={"attempts": 3, **FAST})
    try:
        scores = await comp.score(ITEMS[:2])
    finally:
        await comp.close()
        await server.stop(0)
    assert len(service.sizes) == calls
    assert [s.status for s in scores] == [status] * 2
    if status == Status.OK:
        assert [s.value for s in scores] == [1.0, 2.0]
    else:
        assert f"{code.name}: scripted failure" in scores[0].error


async def test_breaker_opens_fails_fast_then_probes_and_closes():
    service = ScriptedService([grpc.StatusCode.INTERNAL] * 2)
    server, address = await serve(service)
    comp = component(address, retry={"attempts": 1}, breaker={"failures": 2, "cooldown_s": 0.2})
    try:
        for _ in range(2):
            assert (await comp.score(ITEMS[:1]))[0].status == Status.ERROR
        refused = await comp.score(ITEMS[:1])  # open: no call is made
        assert len(service.sizes) == 2
        assert refused[0].status == Status.ERROR and "circuit breaker" in refused[0].error
        await asyncio.sleep(0.3)  # past the cool-down: the next call is the probe
        probe = await comp.score(ITEMS[:1])
    finally:
        await comp.close()
        await server.stop(0)
    assert probe[0].status == Status.OK and probe[0].value == 1.0
    assert len(service.sizes) == 3 and comp.calls.breaker.state == 0


async def test_service_killed_and_restarted_on_the_same_port_is_scored_again():
    port = free_port()
    server, address = await serve(ScriptedService(), port)
    comp = component(address, retry={"attempts": 2, **FAST}, breaker={"failures": 1, "cooldown_s": 0.2}, timeout_s=1.0)
    try:
        assert (await comp.score(ITEMS[:1]))[0].ok
        await server.stop(0)
        down = await comp.score(ITEMS[:1])
        assert down[0].status == Status.ERROR and "UNAVAILABLE" in down[0].error
        server, _ = await serve(ScriptedService(), port)
        await asyncio.sleep(0.3)
        back = await comp.score(ITEMS[:1])
    finally:
        await comp.close()
        await server.stop(0)
    assert back[0].ok and back[0].value == 1.0


async def test_batches_and_concurrency_limit():
    service = ScriptedService(hold_s=0.05)
    server, address = await serve(service)
    comp = component(address, batch_size=2, max_concurrency=1)
    try:
        scores = await comp.score(ITEMS)
    finally:
        await comp.close()
        await server.stop(0)
    assert sorted(service.sizes) == [1, 2, 2]
    assert service.max_in_flight == 1
    assert [s.value for s in scores] == [1.0, 2.0, 3.0, 4.0, 5.0]  # back in item order


async def test_cache_answers_repeats_by_prompt_response_ground_truth():
    service = ScriptedService()
    server, address = await serve(service)
    comp = component(address, cache_size=10)
    repeat = [
        RewardItem(id="h/0", response="x", prompt="p"),  # same key as ITEMS[0]
        RewardItem(id="h/1", response="x", prompt="other prompt"),
    ]  # differs: asked
    try:
        await comp.score(ITEMS[:2])
        scores = await comp.score(repeat)
    finally:
        await comp.close()
        await server.stop(0)
    assert service.sizes == [2, 1]
    assert [s.value for s in scores] == [1.0, 1.0]
    assert (comp.calls.cache.hits, comp.calls.cache.misses) == (1, 3)


async def test_metrics_name_component_service_and_code():
    service = ScriptedService([grpc.StatusCode.INTERNAL] * 2)
    server, address = await serve(service)
    handle = start_metrics("reward", "0", "r1")
    comp = component(address, retry={"attempts": 1}, breaker={"failures": 2, "cooldown_s": 60})
    comp.calls.use_metrics(CallMetrics(handle, component="judge", target=address))
    try:
        for _ in range(3):
            await comp.score(ITEMS[:1])
        text = handle.scrape()
    finally:
        await comp.close()
        await server.stop(0)
        handle.close()
    labels = f'component="judge",replica="0",run="r1",service="reward",target="{address}"'
    assert f'meshrl_reward_external_errors_total{{code="INTERNAL",{labels}}} 2.0' in text
    assert f'meshrl_reward_external_errors_total{{code="BREAKER_OPEN",{labels}}} 1.0' in text
    assert f"meshrl_reward_external_call_seconds_count{{{labels}}} 2.0" in text
    assert f"meshrl_reward_external_breaker_state{{{labels}}} 2.0" in text  # open


async def test_retry_and_timeout_counters():
    code = grpc.StatusCode
    service = ScriptedService([code.UNAVAILABLE, code.DEADLINE_EXCEEDED, code.DEADLINE_EXCEEDED])
    server, address = await serve(service)
    handle = start_metrics("reward", "0", "r1")
    comp = component(address, retry={"attempts": 2, **FAST})
    comp.calls.use_metrics(CallMetrics(handle, component="judge", target=address))
    try:
        first = await comp.score(ITEMS[:1])  # UNAVAILABLE, retried → DEADLINE_EXCEEDED: out of attempts
        second = await comp.score(ITEMS[:1])  # DEADLINE_EXCEEDED, retried → OK
        text = handle.scrape()
    finally:
        await comp.close()
        await server.stop(0)
        handle.close()
    assert (first[0].status, second[0].status) == (Status.TIMEOUT, Status.OK)
    labels = f'component="judge",replica="0",run="r1",service="reward",target="{address}"'
    for line in [
        f'meshrl_reward_external_retries_total{{code="UNAVAILABLE",{labels}}} 1.0',
        f'meshrl_reward_external_retries_total{{code="DEADLINE_EXCEEDED",{labels}}} 1.0',
        f'meshrl_reward_external_errors_total{{code="DEADLINE_EXCEEDED",{labels}}} 1.0',
        f"meshrl_reward_external_timeouts_total{{{labels}}} 1.0",
        f"meshrl_reward_external_call_seconds_count{{{labels}}} 4.0",
    ]:
        assert line in text, line


async def test_span_names_the_component_and_service_with_the_grpc_call_inside(tmp_path):
    from meshrl.telemetry import tracing
    from meshrl.telemetry.spans.read import load_spans

    server, address = await serve(ScriptedService())
    tracing.init_tracing("reward", "0", "r1", run_dir=tmp_path)
    comp = component(address)
    try:
        await comp.score(ITEMS[:1])
    finally:
        await comp.close()
        await server.stop(0)
        tracing.shutdown_tracing()
    spans = {s["name"]: s for s in load_spans(tmp_path)}
    outer, call = spans["reward.external judge"], spans["grpc /meshrl.reward.v1.RewardService/Score"]
    assert outer["attributes"]["meshrl.reward.component"] == "judge"
    assert outer["attributes"]["server.address"] == address
    assert call["parent_span_id"] == outer["span_id"]
