"""meshrl.telemetry.tracing without NATS: JSONL records, header propagation, baggage, links,
the disabled path, and the gRPC interceptors on a real in-process grpc.aio server."""

import grpc
import pytest
from grpc import aio

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.telemetry import tracing
from meshrl.telemetry.metrics import start_metrics
from meshrl.telemetry.spans.grpc import TracingClientInterceptor, TracingServerInterceptor
from meshrl.telemetry.spans.propagation import extract_context, inject_headers
from meshrl.telemetry.spans.read import load_spans
from meshrl.transport.rpc import open_channel, registration, start_server, stop_server, wait_healthy
from tests.fixtures.prometheus import promtool_check, sample

TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
def tracers(tmp_path):
    made = {}

    def make(service, replica="0", run_id="run-a"):
        made[service] = tracing.init_tracing(service, replica, run_id, run_dir=tmp_path, make_current=False)
        return made[service]

    yield make
    for t in made.values():
        tracing.shutdown_tracing(t)


def flushed_spans(run_dir, *tracers_):
    for t in tracers_:
        t.force_flush()
    return {s["name"]: s for s in load_spans(run_dir)}


def test_child_of_incoming_traceparent_and_record_fields(tracers, tmp_path):
    rollout = tracers("rollout", "2")
    with rollout.group_span(
        "rollout.generate", "g-1", headers={"traceparent": TP}, attributes={"n": 4}, policy_version=7
    ):
        out = inject_headers({"Nats-Msg-Id": "g-1"})
    span = flushed_spans(tmp_path, rollout)["rollout.generate"]
    assert (tmp_path / "traces" / "rollout-2.jsonl").is_file()
    assert span["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    assert span["parent_span_id"] == "b7ad6b7169203331"
    assert (span["service"], span["replica"]) == ("rollout", "2")
    assert span["attributes"] == {
        "n": 4,
        "meshrl.group_id": "g-1",
        "meshrl.run_id": "run-a",
        "meshrl.policy_version": 7,
        "meshrl.component": "rollout",
        "meshrl.replica": "2",
    }
    assert span["end_unix_ns"] >= span["start_unix_ns"] > 1.6e18
    assert out["Nats-Msg-Id"] == "g-1"
    assert out["traceparent"].split("-")[1:3] == [span["trace_id"], span["span_id"]]
    assert out["baggage"] == "meshrl.run_id=run-a,meshrl.policy_version=7"


def test_no_headers_is_a_new_root_and_version_comes_from_baggage(tracers, tmp_path):
    learner, reward = tracers("learner"), tracers("reward")
    learner.set_policy_version(3)
    with learner.start_root_group_span("g-2"):
        headers = inject_headers()
    with reward.group_span("reward.score", "g-2", headers=headers):  # no explicit version
        pass
    spans = flushed_spans(tmp_path, learner, reward)
    root, child = spans["learner.publish_prompt"], spans["reward.score"]
    assert root["parent_span_id"] is None and root["kind"] == "PRODUCER"
    assert child["parent_span_id"] == root["span_id"] and child["trace_id"] == root["trace_id"]
    assert root["attributes"]["meshrl.policy_version"] == 3
    assert child["attributes"]["meshrl.policy_version"] == 3  # carried by the baggage header


def test_step_span_links_each_group_with_its_id(tracers, tmp_path):
    learner = tracers("learner")
    learner.set_policy_version(5)
    other = "00-11111111111111111111111111111111-2222222222222222-01"
    headers = [
        {"traceparent": TP, "Nats-Msg-Id": "g-a"},
        {"traceparent": other, "Nats-Msg-Id": "g-b"},
        {"Nats-Msg-Id": "g-untraced"},
    ]
    with learner.step_span(9, headers):
        pass
    step = flushed_spans(tmp_path, learner)["learner.step"]
    assert step["parent_span_id"] is None
    assert step["trace_id"] not in (TP.split("-")[1], "1" * 32)  # its own trace
    assert step["links"] == [
        {
            "trace_id": "0af7651916cd43dd8448eb211c80319c",
            "span_id": "b7ad6b7169203331",
            "attributes": {"meshrl.group_id": "g-a"},
        },
        {"trace_id": "1" * 32, "span_id": "2" * 16, "attributes": {"meshrl.group_id": "g-b"}},
    ]
    assert step["attributes"] == {
        "meshrl.step": 9,
        "meshrl.groups": 2,
        "meshrl.run_id": "run-a",
        "meshrl.policy_version": 5,
        "meshrl.component": "learner",
        "meshrl.replica": "0",
    }


def test_exception_marks_the_span_error_and_still_exports(tracers, tmp_path):
    ref = tracers("reference")
    with pytest.raises(RuntimeError):
        with ref.group_span("reference.logprobs", "g-3"):
            raise RuntimeError("OOM")
    span = flushed_spans(tmp_path, ref)["reference.logprobs"]
    assert span["status"]["code"] == "ERROR"
    assert span["events"][0]["name"] == "exception"
    assert span["events"][0]["attributes"]["exception.message"] == "OOM"


def test_disabled_tracing_creates_nothing_but_forwards_the_trace(tmp_path):
    off = tracing.init_tracing("rollout", "0", "run-a")  # no run dir, no endpoint
    assert not off.enabled and off is tracing.current_tracer()
    with off.group_span("rollout.generate", "g-4", headers={"TraceParent": TP}) as span:
        forwarded = inject_headers()
    assert not span.is_recording()
    assert forwarded["traceparent"] == TP  # same parent: the next hop joins the same trace
    with off.group_span("x", "g-4"):
        assert inject_headers() == {}
    with off.step_span(1, [{"traceparent": TP}]):
        assert inject_headers() == {}
    assert not (tmp_path / "traces").exists()


def test_module_level_helpers_use_the_current_tracer(tmp_path):
    t = tracing.init_tracing("learner", "0", "run-b", run_dir=tmp_path)
    try:
        tracing.set_policy_version(2)
        with tracing.start_root_group_span("g-5"):
            headers = inject_headers()
        with tracing.group_span("learner.receive", "g-5", headers=headers):
            pass
        with tracing.step_span(1, [headers]):
            pass
    finally:
        tracing.shutdown_tracing()
    assert tracing.current_tracer().enabled is False
    spans = {s["name"]: s for s in load_spans(tmp_path)}
    assert set(spans) == {"learner.publish_prompt", "learner.receive", "learner.step"}
    assert spans["learner.receive"]["parent_span_id"] == spans["learner.publish_prompt"]["span_id"]
    assert all(s["attributes"]["meshrl.run_id"] == "run-b" for s in spans.values())
    assert t.enabled is True


def test_extract_from_grpc_metadata_tuples():
    ctx = extract_context((("traceparent", TP), ("bin-bin", b"\x00")))
    assert inject_headers(context=ctx)["traceparent"] == TP
    assert inject_headers(context=extract_context(None)) == {}


class Scorer(reward_pb2_grpc.RewardServiceServicer):
    def __init__(self, tracer):
        self.tracer = tracer

    async def Score(self, request, context):
        if request.component == "bad":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "unknown component")
        with self.tracer.otel.start_as_current_span("external.judge"):
            return reward_pb2.ScoreResponse(
                results=[
                    reward_pb2.ScoreResult(id=i.id, score=1.0, status=common_pb2.SCORE_STATUS_OK) for i in request.items
                ]
            )


async def test_grpc_interceptors_chain_client_and_server_spans(tracers, tmp_path):
    reward, external = tracers("reward"), tracers("external-reward", run_id="")
    server, port = await start_server(
        [
            registration(
                reward_pb2_grpc.add_RewardServiceServicer_to_server,
                Scorer(external),
                reward_pb2.DESCRIPTOR.services_by_name["RewardService"],
            )
        ],
        interceptors=[TracingServerInterceptor(external)],
    )
    try:
        await wait_healthy(f"127.0.0.1:{port}", timeout=5)  # health calls make no spans
        async with open_channel(
            f"127.0.0.1:{port}", interceptors=[TracingClientInterceptor(reward, target=f"127.0.0.1:{port}")]
        ) as ch:
            stub = reward_pb2_grpc.RewardServiceStub(ch)
            with reward.group_span("reward.score", "g-6", headers={"traceparent": TP}, policy_version=4):
                reply = await stub.Score(reward_pb2.ScoreRequest(items=[reward_pb2.ScoreItem(id="a")]), timeout=5)
                with pytest.raises(aio.AioRpcError) as err:
                    await stub.Score(reward_pb2.ScoreRequest(component="bad"), timeout=5)
    finally:
        await stop_server(server, grace=0)
    assert reply.results[0].score == 1.0 and err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    reward.force_flush(), external.force_flush()
    spans = load_spans(tmp_path)
    by_kind = {}
    for s in spans:
        by_kind.setdefault(s["kind"], []).append(s)
    group = next(s for s in spans if s["name"] == "reward.score")
    ok_client, bad_client = sorted(by_kind["CLIENT"], key=lambda s: s["start_unix_ns"])
    ok_server, bad_server = sorted(by_kind["SERVER"], key=lambda s: s["start_unix_ns"])
    judge = next(s for s in spans if s["name"] == "external.judge")
    assert len(spans) == 6  # group + 2 client + 2 server + judge; no health-check spans
    assert ok_client["name"] == "grpc /meshrl.reward.v1.RewardService/Score"
    assert ok_client["parent_span_id"] == group["span_id"]
    assert ok_server["parent_span_id"] == ok_client["span_id"] and ok_server["service"] == "external-reward"
    assert judge["parent_span_id"] == ok_server["span_id"]
    assert {s["trace_id"] for s in spans} == {TP.split("-")[1]}
    assert ok_client["attributes"]["rpc.grpc.status_code"] == 0 and ok_client["status"]["code"] == "UNSET"
    assert bad_client["attributes"]["rpc.grpc.status_code"] == 3 and bad_client["status"]["code"] == "ERROR"
    assert bad_server["status"]["code"] == "ERROR" and bad_server["attributes"]["rpc.grpc.status_code"] == 3
    # the remote end of each hop: the client names the server, the server names its caller
    assert (ok_client["attributes"]["server.address"], ok_client["attributes"]["server.port"]) == ("127.0.0.1", port)
    assert ok_server["attributes"]["network.peer.address"] == "127.0.0.1"
    assert ok_server["attributes"]["network.peer.port"] > 0
    # the external server has no run id of its own: run id and version arrive as baggage
    assert {(s["attributes"]["meshrl.run_id"], s["attributes"]["meshrl.policy_version"]) for s in spans} == {
        ("run-a", 4)
    }


async def test_every_grpc_call_lands_in_the_latency_histogram():
    """Tracing off, metrics on: the default interceptors of start_server / open_channel still
    time every call, on both sides, by method and status."""
    with start_metrics("reward", "0", "run-h") as handle:
        server, port = await start_server(
            [
                registration(
                    reward_pb2_grpc.add_RewardServiceServicer_to_server,
                    Scorer(tracing.Tracer.disabled()),
                    reward_pb2.DESCRIPTOR.services_by_name["RewardService"],
                )
            ]
        )
        try:
            async with open_channel(f"127.0.0.1:{port}") as ch:
                stub = reward_pb2_grpc.RewardServiceStub(ch)
                await stub.Score(reward_pb2.ScoreRequest(items=[reward_pb2.ScoreItem(id="a")]), timeout=5)
                with pytest.raises(aio.AioRpcError):
                    await stub.Score(reward_pb2.ScoreRequest(component="bad"), timeout=5)
        finally:
            await stop_server(server, grace=0)
        text = handle.scrape()
    score = dict(rpc_service="meshrl.reward.v1.RewardService", rpc_method="Score", service="reward")
    for side in ("client", "server"):
        for status in ("OK", "INVALID_ARGUMENT"):
            assert (
                sample(text, "meshrl_rpc_duration_seconds_count", rpc_side=side, rpc_grpc_status=status, **score) == 1
            )
    promtool_check(text)


def test_group_spans_name_the_nats_server_without_its_credentials(tracers, tmp_path):
    rollout = tracers("rollout")
    rollout.set_broker("nats://meshrl:s3cret@10.1.2.3:4333,nats://10.1.2.4:4222")
    with rollout.group_span("rollout.generate", "g-2", headers={"traceparent": TP}):
        pass
    span = flushed_spans(tmp_path, rollout)["rollout.generate"]
    assert {k: span["attributes"][k] for k in ("messaging.system", "server.address", "server.port")} == {
        "messaging.system": "nats",
        "server.address": "10.1.2.3",
        "server.port": 4333,
    }
    assert "s3cret" not in (tmp_path / "traces" / "rollout-0.jsonl").read_text()
    assert tracing.broker_attributes("nats://localhost") == {
        "messaging.system": "nats",
        "server.address": "localhost",
        "server.port": 4222,
    }
