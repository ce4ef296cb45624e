"""The gateway on real ports (gRPC and HTTP) over a runs root holding one ended run written
by the test: both transports give the same answers from the same handlers; roles are
enforced on both; samples page newest first; bad input gets a message naming it.
(The live run - status, pause, traces - is covered in tests/e2e/test_gateway_browser.py.)"""

import json

import aiohttp
import grpc
import pytest
import pytest_asyncio

from meshrl.api.gateway.v1 import gateway_pb2 as pb
from meshrl.api.gateway.v1 import gateway_pb2_grpc
from meshrl.gateway.auth.tokens import TokenAuth, load_tokens
from meshrl.gateway.serve import start_gateway

OPERATOR, VIEWER, ADMIN = "operator-token-0123456789", "viewer-token-0123456789ab", "admin-token-0123456789abc"


def write_run(run_dir):
    run_dir.mkdir()
    (run_dir / "launcher.lock").touch()  # a launcher on this machine ran it
    (run_dir / "config.yaml").write_text("run: {name: ended}\nlearner: {steps: 10}\n")
    held_out = {0: {"eval_start/accuracy": 0.25, "eval_start/n": 8.0}, 3: {"eval/accuracy": 0.625, "eval/n": 8.0}}
    (run_dir / "metrics.jsonl").write_text(
        "".join(
            json.dumps({"step": i, "reward": i / 10, "weights_version": float(i + 1), **held_out.get(i, {})}) + "\n"
            for i in range(4)
        )
    )
    # the ledger: 5 groups published, 3 trained, 1 dropped (what `meshrl status RUN_DIR` counts)
    events = [("published", f"g{i}") for i in range(5)] + [("trained", f"g{i}") for i in range(3)]
    (run_dir / "groups.jsonl").write_text(
        "".join(json.dumps({"event": e, "group_id": g}) + "\n" for e, g in [*events, ("dropped", "g3")])
    )
    (run_dir / "samples.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "step": i // 2,
                    "split": "train" if i < 4 else "eval",
                    "group_id": f"g{i}",
                    "prompt": "p",
                    "response": "r",
                    "reward": 1.0,
                    "components": {"vowel": {"value": 1.0, "status": "OK"}},
                }
            )
            + "\n"
            for i in range(5)
        )
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    write_run(root / "ended")
    tokens = root.parent / "tokens.yaml"
    tokens.write_text(
        f"tokens:\n  - {{name: olga, role: operator, token: {OPERATOR}}}\n"
        f"  - {{name: vic, role: viewer, token: {VIEWER}}}\n"
        f"  - {{name: ada, role: admin, token: {ADMIN}}}\n"
    )
    gw = await start_gateway(root, TokenAuth(load_tokens(tokens)))
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{gw.grpc_port}")
    async with aiohttp.ClientSession(f"http://127.0.0.1:{gw.http_port}") as http:
        yield gw, gateway_pb2_grpc.GatewayServiceStub(channel), http
    await channel.close()
    await gw.stop()


def auth(token):
    return (("authorization", f"Bearer {token}"),)


async def get(http, path, token=VIEWER):
    async with http.get(path, headers={"Authorization": f"Bearer {token}"}) as r:
        return r.status, await r.json()


@pytest.mark.asyncio(loop_scope="session")
async def test_list_runs_is_the_same_over_grpc_and_http(gateway):
    _, stub, http = gateway
    reply = await stub.ListRuns(pb.ListRunsRequest(), metadata=auth(VIEWER))
    assert [(r.name, r.live, r.last_step) for r in reply.runs] == [("ended", False, 3)]
    status, body = await get(http, "/api/runs")
    assert status == 200 and [(r["name"], r["live"], r["last_step"]) for r in body["runs"]] == [("ended", False, "3")]


def test_a_run_a_learner_writes_with_no_launcher_here_is_running_until_its_final_model(tmp_path):
    """compose or Kubernetes: no launcher.lock, metrics written a moment ago."""
    from gateway.runs.status import ended_status

    run_dir = tmp_path / "compose-run"
    write_run(run_dir)
    (run_dir / "launcher.lock").unlink()
    assert (ended_status(run_dir).learner.state, ended_status(run_dir).learner.step) == ("RUNNING", 4)
    (run_dir / "final").mkdir()
    assert ended_status(run_dir).learner.state == "ENDED"


@pytest.mark.asyncio(loop_scope="session")
async def test_an_ended_runs_status_is_its_last_step_of_its_total_and_its_policy_version(gateway):
    """Steps 0..3 trained of learner.steps 10, the last one pushing weights version 4."""
    _, stub, http = gateway
    reply = await stub.GetRunStatus(pb.GetRunStatusRequest(run="ended"), metadata=auth(VIEWER))
    learner = reply.learner
    assert (learner.state, learner.step, learner.total_steps, learner.policy_version) == ("ENDED", 4, 10, 4)
    assert learner.groups_trained == 3  # the ledger's trained groups, as `meshrl status RUN_DIR` counts them
    assert not reply.run.live and not reply.replicas
    outcome = reply.outcome
    assert (outcome.final_reward, outcome.accuracy_before, outcome.accuracy_after) == (0.3, 0.25, 0.625)
    assert (outcome.accuracy_after_step, outcome.eval_prompts, outcome.final_model) == (3, 8, "")
    assert outcome.ended.startswith("ended after 4 steps without finishing; there is no checkpoint")
    status, body = await get(http, "/api/runs/ended/status")
    assert status == 200 and body["learner"]["step"] == "4" and body["learner"]["policy_version"] == "4"
    assert body["learner"]["groups_trained"] == "3" and body["outcome"]["final_reward"] == 0.3


def test_a_finished_runs_status_says_where_its_final_model_is(tmp_path):
    from gateway.runs.status import ended_status

    run_dir = tmp_path / "done"
    write_run(run_dir)
    (run_dir / "config.yaml").write_text("learner: {steps: 4}\n")
    (run_dir / "final").mkdir()
    outcome = ended_status(run_dir).outcome
    assert outcome.ended == "finished: every step trained, final model saved"
    assert outcome.final_model == str(run_dir / "final")


@pytest.mark.asyncio(loop_scope="session")
async def test_metrics_rows_from_an_index(gateway):
    _, stub, http = gateway
    rows = [
        r async for r in stub.StreamMetrics(pb.StreamRecordsRequest(run="ended", from_index=2), metadata=auth(VIEWER))
    ]
    assert [(r.index, r.row["step"], r.row["reward"]) for r in rows] == [(2, 2, 0.2), (3, 3, 0.3)]
    status, body = await get(http, "/api/runs/ended/metrics?from_index=2")
    assert [(r["index"], r["row"]["reward"]) for r in body["records"]] == [("2", 0.2), ("3", 0.3)]


@pytest.mark.asyncio(loop_scope="session")
async def test_sse_stream_of_an_ended_run_sends_every_row_then_end(gateway):
    _, _, http = gateway
    async with http.get("/api/runs/ended/metrics?follow=1", headers={"Authorization": f"Bearer {VIEWER}"}) as r:
        assert r.headers["Content-Type"] == "text/event-stream"
        text = await r.text()
    assert [json.loads(x[6:])["row"]["step"] for x in text.splitlines() if x.startswith('data: {"index')] == [
        0,
        1,
        2,
        3,
    ]
    assert text.endswith("event: end\ndata: {}\n\n")


@pytest.mark.asyncio(loop_scope="session")
async def test_samples_pages_newest_first(gateway):
    _, stub, http = gateway
    first = await stub.ListSamples(pb.ListSamplesRequest(run="ended", page_size=2), metadata=auth(VIEWER))
    assert [s["group_id"] for s in first.samples] == ["g4", "g3"] and first.total == 5 and first.next_page_token == "2"
    last = await stub.ListSamples(
        pb.ListSamplesRequest(run="ended", page_size=2, page_token="4"), metadata=auth(VIEWER)
    )
    assert [s["group_id"] for s in last.samples] == ["g0"] and last.next_page_token == ""
    status, body = await get(http, "/api/runs/ended/samples?split=train&page_size=3")
    assert [s["group_id"] for s in body["samples"]] == ["g3", "g2", "g1"] and body["samples"][0]["components"]["vowel"][
        "status"
    ] == "OK"
    status, body = await get(http, "/api/runs/ended/samples?split=test")
    assert status == 400 and "split 'test'" in body["error"]


@pytest.mark.asyncio(loop_scope="session")
async def test_roles_and_tokens_on_both_transports(gateway):
    _, stub, http = gateway
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.PauseRun(pb.RunActionRequest(run="ended"), metadata=auth(VIEWER))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED and "needs the operator role" in err.value.details()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.ListRuns(pb.ListRunsRequest())
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
    async with http.post("/api/runs/ended/pause", json={}, headers={"Authorization": f"Bearer {VIEWER}"}) as r:
        assert r.status == 403
    async with http.get("/api/runs") as r:
        assert r.status == 401
    # an operator may pause, but this run is not running: 409 with what to do
    async with http.post("/api/runs/ended/pause", json={}, headers={"Authorization": f"Bearer {OPERATOR}"}) as r:
        body = await r.json()
        assert r.status == 409 and "is not running" in body["error"] and "meshrl train --resume" in body["error"]


@pytest.mark.asyncio(loop_scope="session")
async def test_unknown_run_and_bad_names(gateway):
    _, stub, http = gateway
    assert (await get(http, "/api/runs/nope/status"))[0] == 404
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.GetRunStatus(pb.GetRunStatusRequest(run="../etc"), metadata=auth(VIEWER))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.asyncio(loop_scope="session")
async def test_dashboard_pages_and_vendored_chart_library_are_served(gateway):
    _, _, http = gateway
    for path in ("/", "/runs/ended", "/static/vendor/uPlot.iife.min.js", "/static/run.js"):
        async with http.get(path) as r:
            assert r.status == 200, path


@pytest.mark.asyncio(loop_scope="session")
async def test_meshrl_status_asks_the_gateway_for_a_run_url(gateway, monkeypatch, capsys):
    import asyncio

    from meshrl.cli.main import main

    gw, _, _ = gateway
    url = f"http://127.0.0.1:{gw.http_port}/runs/ended"
    monkeypatch.delenv("MESHRL_GATEWAY_TOKEN", raising=False)
    assert await asyncio.to_thread(main, ["status", url]) == 2
    assert "set MESHRL_GATEWAY_TOKEN" in capsys.readouterr().err
    monkeypatch.setenv("MESHRL_GATEWAY_TOKEN", VIEWER)
    assert await asyncio.to_thread(main, ["status", url]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        "run ended  (no launcher here; last step index 3)",
        "learner  ENDED  step 4/10  policy v4  groups trained 3",  # the run dir's last step and ledger
    ]
    assert out[2].startswith("outcome: ended after 4 steps without finishing; there is no checkpoint")
    assert out[3:] == [
        "final reward 0.300  held-out accuracy: 0.250 at start -> 0.625 after step 3 (8 prompts)",
        "final model: none (final/ is written when the last step is trained)",
    ]
    assert await asyncio.to_thread(main, ["status", url.replace("ended", "nope")]) == 2
    assert "the gateway answered 404: no run 'nope'" in capsys.readouterr().err


@pytest.mark.asyncio(loop_scope="session")
async def test_submit_and_rollback_are_for_admins_and_check_their_input(gateway):
    _, stub, http = gateway

    async def post(path, body, token):
        async with http.post(path, json=body, headers={"Authorization": f"Bearer {token}"}) as r:
            return r.status, await r.json()

    status, body = await post("/api/runs", {"name": "new", "config_yaml": "run: {}"}, OPERATOR)
    assert status == 403 and "SubmitRun needs the admin role" in body["error"]
    status, body = await post("/api/runs", {"name": "ended", "config_yaml": "run: {}"}, ADMIN)
    assert status == 409 and "exists; pick another name" in body["error"]
    status, body = await post("/api/runs", {"name": "new", "config_yaml": "model: {path: 3}\nbogus: 1\n"}, ADMIN)
    assert status == 400 and body["error"].startswith("the config does not load")
    status, body = await post("/api/runs", {"name": "a/b", "config_yaml": ""}, ADMIN)
    assert status == 400 and "is not a run dir name" in body["error"]
    status, body = await post("/api/runs/ended/rollback", {"to_step": 5}, ADMIN)
    assert status == 400 and "5" in body["error"]
