"""One prompt group through a simulated 4-service mesh in one process, over real NATS and a
real gRPC hop, traced end to end; then `meshrl trace` renders it.

learner ──prompts──▶ rollout ──generated──▶ reward ──scored──▶ reference ──ready──▶ learner step
                                              │ gRPC (TracingClientInterceptor)
                                              ▼
                                    external RewardService (TracingServerInterceptor)

The services here are scaffolding: each is a bus worker making the calls the real service
makes (group_span around its work, inject_headers() on its publish).
"""

import argparse
import asyncio

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.cli.trace import add_subcommand, cmd_trace, render_waterfall, trace_for_group
from meshrl.telemetry import tracing
from meshrl.telemetry.spans.grpc import TracingClientInterceptor, TracingServerInterceptor
from meshrl.telemetry.spans.read import load_spans
from meshrl.transport.bus.subjects import durable_of
from meshrl.transport.rpc import open_channel, registration, start_server, stop_server

GID = "g-000042"
GENERATED_BY = 2  # policy version the rollout sampled with
LEARNER_VERSION = 3


class ExternalReward(reward_pb2_grpc.RewardServiceServicer):
    async def Score(self, request, context):
        return reward_pb2.ScoreResponse(
            results=[
                reward_pb2.ScoreResult(id=i.id, score=1.0, status=common_pb2.SCORE_STATUS_OK) for i in request.items
            ]
        )


def group_from(task: common_pb2.PromptTask) -> common_pb2.Group:
    return common_pb2.Group(
        run_id=task.run_id,
        group_id=task.group_id,
        task=task,
        policy_version=GENERATED_BY,
        samples=[common_pb2.Sample(index=0, response_text="7")],
    )


def handlers(bus, t, stub):
    async def rollout(task, ctx):
        with t["rollout"].group_span(
            "rollout.generate", task.group_id, headers=ctx.headers, policy_version=GENERATED_BY
        ):
            await bus.publish("generated", group_from(task), msg_id=task.group_id, headers=tracing.inject_headers())

    async def reward(group, ctx):
        with t["reward"].group_span(
            "reward.score", group.group_id, headers=ctx.headers, policy_version=group.policy_version
        ):
            items = [
                reward_pb2.ScoreItem(id=f"{group.group_id}/{s.index}", response=s.response_text) for s in group.samples
            ]
            reply = await stub.Score(reward_pb2.ScoreRequest(run_id=group.run_id, items=items), timeout=5)
            group.samples[0].reward = reply.results[0].score
            await bus.publish("scored", group, msg_id=group.group_id, headers=tracing.inject_headers())

    async def reference(group, ctx):
        with t["reference"].group_span(
            "reference.logprobs", group.group_id, headers=ctx.headers, policy_version=group.policy_version
        ):
            await bus.publish("ready", group, msg_id=group.group_id, headers=tracing.inject_headers())

    return {"prompts": rollout, "generated": reward, "scored": reference}


async def learner_round(bus, learner):
    learner.set_policy_version(LEARNER_VERSION)
    task = common_pb2.PromptTask(run_id=bus.run_id, group_id=GID, prompt_text="3+4=")
    with learner.start_root_group_span(GID):
        await bus.publish("prompts", task, msg_id=GID, headers=tracing.inject_headers())
    batch = []
    for _ in range(20):
        batch += await bus.pull("ready", "learner", max_msgs=1, timeout=0.5)
        if batch:
            break
    assert [d.message.group_id for d in batch] == [GID], "the group never reached the learner"
    with learner.step_span(1, [d.headers for d in batch]):
        assert batch[0].message.samples[0].reward == 1.0
    for d in batch:
        await d.ack()


async def flush_until_all_written(tracers, run_dir, expected=7):
    """Each service ends its span after its publish is acked, which can be after the learner has
    already stepped on the group: wait for every span to reach the files before reading them."""
    for _ in range(50):
        for tracer in tracers.values():
            tracer.force_flush()
        if len(load_spans(run_dir)) >= expected:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"only {len(load_spans(run_dir))} of {expected} spans were written")


@pytest.fixture
async def mesh(bus, tmp_path):
    """Five tracers writing JSONL into tmp_path, the external server, and the three workers."""
    t = {
        name: tracing.init_tracing(name, "0", bus.run_id, run_dir=tmp_path, make_current=False)
        for name in ("learner", "rollout", "reward", "reference", "external-reward")
    }
    server, port = await start_server(
        [
            registration(
                reward_pb2_grpc.add_RewardServiceServicer_to_server,
                ExternalReward(),
                reward_pb2.DESCRIPTOR.services_by_name["RewardService"],
            )
        ],
        interceptors=[TracingServerInterceptor(t["external-reward"])],
    )
    channel = open_channel(f"127.0.0.1:{port}", interceptors=[TracingClientInterceptor(t["reward"])])
    work = handlers(bus, t, reward_pb2_grpc.RewardServiceStub(channel))
    # the run's own durables (a work queue takes one consumer per stage: a second name never receives)
    tasks = [asyncio.create_task(bus.worker(stage, durable_of(stage), fn, ack_wait=10)) for stage, fn in work.items()]
    yield t
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await channel.close()
    await stop_server(server, grace=0)
    for tracer in t.values():
        tracing.shutdown_tracing(tracer)


async def test_one_group_is_one_trace_across_every_service(bus, mesh, tmp_path):
    await learner_round(bus, mesh["learner"])
    await flush_until_all_written(mesh, tmp_path)
    spans = {s["name"]: s for s in load_spans(tmp_path)}
    root, gen = spans["learner.publish_prompt"], spans["rollout.generate"]
    score, ref, step = spans["reward.score"], spans["reference.logprobs"], spans["learner.step"]
    client = spans["grpc /meshrl.reward.v1.RewardService/Score"]
    server = next(s for s in load_spans(tmp_path) if s["kind"] == "SERVER")
    group_spans = [root, gen, score, client, server, ref]

    assert {s["trace_id"] for s in group_spans} == {root["trace_id"]}
    assert {s["service"] for s in group_spans} == {"learner", "rollout", "reward", "reference", "external-reward"}
    assert root["parent_span_id"] is None
    assert gen["parent_span_id"] == root["span_id"]
    assert score["parent_span_id"] == gen["span_id"]
    assert client["parent_span_id"] == score["span_id"]
    assert server["parent_span_id"] == client["span_id"]
    assert ref["parent_span_id"] == score["span_id"]  # the gRPC call ended before `scored` was published
    assert step["trace_id"] != root["trace_id"] and step["parent_span_id"] is None
    assert step["links"] == [
        {"trace_id": root["trace_id"], "span_id": ref["span_id"], "attributes": {"meshrl.group_id": GID}}
    ]
    assert all(s["attributes"]["meshrl.run_id"] == bus.run_id for s in spans.values())
    versions = {s["name"]: s["attributes"]["meshrl.policy_version"] for s in spans.values()}
    assert versions == {
        "learner.publish_prompt": LEARNER_VERSION,
        "rollout.generate": GENERATED_BY,
        "reward.score": GENERATED_BY,
        client["name"]: GENERATED_BY,
        "reference.logprobs": GENERATED_BY,
        "learner.step": LEARNER_VERSION,
    }
    assert server["attributes"]["meshrl.policy_version"] == GENERATED_BY  # via baggage

    tree = trace_for_group(tmp_path, GID)
    assert [(s["name"], s["depth"]) for s in tree] == [
        ("learner.publish_prompt", 0),
        ("rollout.generate", 1),
        ("reward.score", 2),
        (client["name"], 3),
        (server["name"], 4),
        ("reference.logprobs", 3),
    ]
    text = render_waterfall(tree, linked=[step])
    lines = text.splitlines()
    assert lines[0].startswith(f"trace {root['trace_id']} · 6 spans · ")
    assert [ln.split("|")[0].split()[-1] for ln in lines[2:8]] == [s["name"].split()[-1] for s in tree]
    assert "      reference.logprobs" in lines[7] and "reference-0" in lines[7]
    assert lines[8].startswith("linked from: learner-0 learner.step (meshrl.step=1) +")


async def test_meshrl_trace_command_prints_it_and_names_known_groups(bus, mesh, tmp_path, capsys):
    await learner_round(bus, mesh["learner"])
    await flush_until_all_written(mesh, tmp_path)
    parser = argparse.ArgumentParser()
    add_subcommand(parser.add_subparsers())
    assert cmd_trace(parser.parse_args(["trace", str(tmp_path), GID])) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 9 and "rollout-0" in out and "linked from: learner-0 learner.step" in out
    assert cmd_trace(parser.parse_args(["trace", str(tmp_path), "g-nope"])) == 2
    err = capsys.readouterr().err
    assert f"group 'g-nope' has no spans in {tmp_path / 'traces'}" in err and f"known groups: {GID}" in err
