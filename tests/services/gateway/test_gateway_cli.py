"""The `meshrl` verbs that steer a run, against a real gateway (its real HTTP port) and a real
learner control server: `meshrl pause|resume|stop|scale URL` are answered for an operator and
recorded in audit.jsonl with the token's name; a viewer is refused (exit 2, the role named);
a bad URL, a missing token or nothing listening give one clear line. The same verbs on the
local RUN_DIR call the learner directly (who = $USER, via cli). `meshrl checkpoints list URL`
and `meshrl rollback URL` on a stopped run with real checkpoints (the checkpoint tests'
save_run), and SubmitRun's success path: the gateway starts `meshrl train` on the config.
`meshrl trace URL GROUP` and `meshrl plot URL` read what the gateway serves (real span files
from the project's tracer and exporter, a metrics.jsonl) and print / draw exactly what the
same verbs give from the run dir.

    .venv/bin/python -m pytest -q tests/services/gateway/test_gateway_cli.py
"""

import asyncio
import contextlib
import json
import os
import signal
import time
from pathlib import Path

import aiohttp
import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Link

from meshrl.cli.main import main
from meshrl.gateway.auth.tenant import TenantPolicy
from meshrl.gateway.auth.tokens import TokenAuth, load_tokens
from meshrl.gateway.serve import start_gateway
from meshrl.run.audit import current_user
from meshrl.telemetry import tracing
from meshrl.telemetry.spans.propagation import GROUP_ID_KEY
from tests.services.gateway.test_gateway_api import ADMIN, OPERATOR, VIEWER
from tests.services.gateway.test_gateway_audit_events import live_run
from tests.unit.cli.plot.test_plot import png_size, synthetic_row
from tests.unit.inputs.checkpoint.conftest import save_run  # noqa: F401 - the fixture, used by name

CONFIG = Path(__file__).resolve().parents[3] / "examples" / "grpo_smollm2.yaml"
T0, MS = (1_700_000_000 * 10**9 >> 20) << 20, 1 << 20  # span times a double holds exactly (≈1 ms steps)


@pytest.fixture
async def served(tmp_path, nats_url, run_id, monkeypatch, bus):
    """(gateway base URL, runs root, the live run's LearnerState): runs/live is a live run (its
    launcher.json names this process and a real learner control server with mutual TLS)."""
    root = tmp_path / "runs"
    root.mkdir()
    run_dir, state, learner = await live_run(root, nats_url, run_id, monkeypatch)
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        f"tokens:\n  - {{name: olga, role: operator, token: {OPERATOR}}}\n"
        f"  - {{name: vic, role: viewer, token: {VIEWER}}}\n"
        f"  - {{name: ada, role: admin, token: {ADMIN}}}\n"
    )
    gw = await start_gateway(root, TokenAuth(load_tokens(tokens)), tenants=TenantPolicy(roots=[tmp_path]))
    yield f"http://127.0.0.1:{gw.http_port}", root, state
    await gw.stop()
    await learner.stop(None)


async def meshrl(monkeypatch, capsys, token, *argv) -> tuple[int, str, str]:
    """`meshrl ARGV` with $MESHRL_GATEWAY_TOKEN=token, in a thread (the servers run on this loop)."""
    monkeypatch.setenv("MESHRL_GATEWAY_TOKEN", token)
    code = await asyncio.to_thread(main, [str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def audit_rows(run_dir: Path) -> list[tuple]:
    rows = [json.loads(x) for x in (run_dir / "audit.jsonl").read_text().splitlines()]
    return [(r["who"], r["via"], r["action"]) for r in rows]


async def test_pause_and_resume_through_the_gateway_are_audited_and_a_viewer_is_refused(served, monkeypatch, capsys):
    base, root, state = served
    code, out, _ = await meshrl(
        monkeypatch, capsys, OPERATOR, "pause", f"{base}/runs/live", "--reason", "look at the KL"
    )
    assert code == 0 and out == "learner paused at step 0\n" and state.message == "paused: look at the KL"
    code, out, err = await meshrl(monkeypatch, capsys, VIEWER, "resume", f"{base}/runs/live")
    assert code == 2 and out == ""
    assert "the gateway answered 403: ResumeRun needs the operator role; vic is a viewer" in err
    assert state.message == "paused: look at the KL"  # the viewer changed nothing
    code, out, _ = await meshrl(monkeypatch, capsys, OPERATOR, "resume", f"{base}/runs/live/")
    assert code == 0 and out == "learner running at step 0\n" and state.resumed.is_set()
    assert audit_rows(root / "live") == [("olga", "gateway", "pause"), ("olga", "gateway", "resume")]


async def test_bad_urls_tokens_and_runs_get_one_clear_line(served, monkeypatch, capsys):
    base, _, _ = served
    cases = [
        (OPERATOR, f"{base}/live", "is not a run's URL: use http://HOST:PORT/runs/NAME"),
        ("not-a-token-0123456789", f"{base}/runs/live", "answered 401: missing or unknown bearer token"),
        (OPERATOR, f"{base}/runs/nope", "the gateway answered 404: no run 'nope'"),
        (OPERATOR, "http://127.0.0.1:9/runs/live", "cannot reach the gateway at http://127.0.0.1:9/runs/live"),
    ]
    for token, url, message in cases:
        code, _, err = await meshrl(monkeypatch, capsys, token, "pause", url)
        assert code == 2 and message in err and err.count("\n") == 1, (url, err)
    monkeypatch.delenv("MESHRL_GATEWAY_TOKEN")
    assert await asyncio.to_thread(main, ["stop", f"{base}/runs/live"]) == 2
    assert "set MESHRL_GATEWAY_TOKEN to a gateway token" in capsys.readouterr().err


async def test_scale_through_the_gateway_writes_the_request_and_names_a_missing_service(served, monkeypatch, capsys):
    base, root, _ = served
    code, out, _ = await meshrl(monkeypatch, capsys, OPERATOR, "scale", f"{base}/runs/live", "rollout=2")
    assert code == 0 and out == "asked the launcher: rollout ×1 → ×2\n"
    assert json.loads((root / "live" / "scale.json").read_text()) == {"rollout": 2}
    code, _, err = await meshrl(monkeypatch, capsys, OPERATOR, "scale", f"{base}/runs/live", "reference=1")
    assert code == 2 and "no scalable 'reference' service; it runs rollout ×1" in err
    assert audit_rows(root / "live") == [("olga", "gateway", "scale")]


async def test_stop_through_the_gateway_and_locally_sends_the_launcher_sigterm(served, monkeypatch, capsys):
    """This process is the run's launcher (it holds the launch lock and serves the learner's
    port: live_run): stop signals it, caught here instead of ending the tests."""
    base, root, _ = served
    run_dir, caught = root / "live", []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: caught.append(signum))
    try:
        for target in (f"{base}/runs/live", run_dir):
            code, out, _ = await meshrl(monkeypatch, capsys, OPERATOR, "stop", target, "--reason", "done")
            assert code == 0 and out == f"asked the launcher (pid {os.getpid()}) to stop the run\n"
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert caught == [signal.SIGTERM, signal.SIGTERM]
    assert audit_rows(run_dir) == [("olga", "gateway", "stop"), (current_user(), "cli", "stop")]


async def test_pause_and_resume_a_local_run_dir_call_its_learner(served, monkeypatch, capsys):
    _, root, state = served
    run_dir = root / "live"
    code, out, _ = await meshrl(monkeypatch, capsys, "", "pause", run_dir, "--reason", "by hand")
    assert code == 0 and out == "learner paused at step 0\n" and state.message == "paused: by hand"
    code, out, _ = await meshrl(monkeypatch, capsys, "", "resume", run_dir)
    assert code == 0 and out == "learner running at step 0\n" and state.resumed.is_set()
    rows = [json.loads(x) for x in (run_dir / "audit.jsonl").read_text().splitlines()]
    assert [(r["who"], r["via"], r["action"], r["reason"]) for r in rows] == [
        (current_user(), "cli", "pause", "by hand"),
        (current_user(), "cli", "resume", ""),
    ]
    code, _, err = await meshrl(monkeypatch, capsys, "", "pause", root / "nope")
    assert code == 2 and "is not a directory; pass the run dir of a running `meshrl train`" in err


async def test_checkpoints_list_and_rollback_through_the_gateway(served, save_run, monkeypatch, capsys):  # noqa: F811
    base, root, _ = served
    save_run([1, 2, 3], run_dir=root / "stopped")
    (root / "stopped" / "config.yaml").write_text("run: {name: stopped}\n")
    url = f"{base}/runs/stopped"
    code, out, _ = await meshrl(monkeypatch, capsys, VIEWER, "checkpoints", "list", url)
    assert code == 0 and [line.split()[:2] for line in out.splitlines()] == [
        ["STEP", "STATUS"],
        ["1", "ok"],
        ["2", "ok"],
        ["3", "ok"],
    ]
    code, _, err = await meshrl(monkeypatch, capsys, OPERATOR, "rollback", url, "--to", "2")
    assert code == 2 and "RollbackRun needs the admin role; olga is a operator" in err
    code, out, _ = await meshrl(monkeypatch, capsys, ADMIN, "rollback", url, "--to", "2")
    assert code == 0 and out == "current checkpoint is now step_2\n"
    code, out, _ = await meshrl(monkeypatch, capsys, VIEWER, "checkpoints", "list", url)
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["1", "2"]
    assert (root / "stopped" / "checkpoints" / "rolled_back").is_dir()
    assert audit_rows(root / "stopped") == [("ada", "gateway", "rollback")]


async def test_submit_run_starts_meshrl_train_on_the_submitted_config(served):
    """SubmitRun's success path: the config and the audit row land in ROOT/.submitted and the
    child is `meshrl train` on them (here its model path does not exist, so it stops at once
    with the launcher's own message in the log instead of starting a mesh). Its files lie in
    the gateway's tenant root (tests/security/test_tenant_submissions.py: what else is refused)."""
    base, root, _ = served
    missing = root.parent / "nonexistent-model"  # inside the gateway's tenant root (tmp_path)
    body = {"name": "fresh", "config_yaml": CONFIG.read_text(), "overrides": [f"model.path={missing}"]}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{base}/api/runs", json=body, headers={"Authorization": f"Bearer {ADMIN}"}) as r:
            assert r.status == 200, await r.text()
            reply = await r.json()
    assert reply["run"] == "fresh" and reply["launcher_pid"] > 0
    submitted = root / ".submitted"
    assert (submitted / "fresh.yaml").read_text() == CONFIG.read_text()
    row = json.loads((submitted / "audit.jsonl").read_text())
    assert (row["who"], row["action"], row["run"], row["launcher_pid"]) == (
        "ada",
        "submit",
        "fresh",
        reply["launcher_pid"],
    )
    log, deadline = submitted / "fresh.log", time.monotonic() + 60
    while f"model.path={missing} does not exist" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        await asyncio.sleep(0.2)
    with contextlib.suppress(ChildProcessError):  # the gateway (this process) started it: reap it
        os.waitpid(reply["launcher_pid"], 0)


async def test_checkpoint_through_the_gateway_and_locally_prints_where_it_was_written(served, monkeypatch, capsys):
    """The learner loop's side of Checkpoint (loop.answer_checkpoint_requests: save, then
    answer step and path) is played by a task on the real control service's request queue."""
    base, root, state = served
    tags = []

    async def answer_like_the_loop():
        while True:
            tag, done = await state.checkpoint_requests.get()
            tags.append(tag)
            done.set_result((7, f"/ckpt/step_7-{len(tags)}"))

    loop_task = asyncio.create_task(answer_like_the_loop())
    code, out, _ = await meshrl(monkeypatch, capsys, OPERATOR, "checkpoint", f"{base}/runs/live", "--tag", "best")
    assert code == 0 and out == "checkpoint of step 7 written to /ckpt/step_7-1\n"
    code, out, _ = await meshrl(monkeypatch, capsys, "", "checkpoint", root / "live")
    assert code == 0 and out == "checkpoint of step 7 written to /ckpt/step_7-2\n"
    loop_task.cancel()
    rows = [json.loads(x) for x in (root / "live" / "audit.jsonl").read_text().splitlines()]
    assert [(r["who"], r["via"], r["action"], r["step"]) for r in rows] == [
        ("olga", "gateway", "checkpoint", 7),
        (current_user(), "cli", "checkpoint", 7),
    ]
    assert tags == ["best", ""]


def timed_span(tracer, name, start_ms, end_ms, parent=None, attributes=None, links=()):
    """A finished span at fixed times, through the tracer's real provider and file exporter."""
    context = otel_trace.set_span_in_context(parent) if parent is not None else None
    span = tracer.otel.start_span(
        name, context=context, start_time=T0 + start_ms * MS, attributes=attributes, links=links
    )
    span.end(end_time=T0 + end_ms * MS)
    return span


def write_group_trace(run_dir: Path) -> None:
    """Group g-1's trace across learner, rollout and reward files, and the learner's step linked to it."""
    learner, rollout, reward = (
        tracing.init_tracing(s, "0", "run-t", run_dir=run_dir, make_current=False)
        for s in ("learner", "rollout", "reward")
    )
    root = timed_span(learner, "learner.publish_prompt", 0, 2, attributes={GROUP_ID_KEY: "g-1"})
    generate = timed_span(rollout, "rollout.generate", 2, 30, root, {GROUP_ID_KEY: "g-1"})
    timed_span(reward, "reward.score", 31, 37, generate, {GROUP_ID_KEY: "g-1"})
    timed_span(
        learner, "learner.step", 40, 55, attributes={"meshrl.step": 4}, links=[Link(generate.get_span_context())]
    )
    for tracer in (learner, rollout, reward):
        tracing.shutdown_tracing(tracer)


async def test_trace_through_the_gateway_prints_the_run_dirs_waterfall(served, monkeypatch, capsys):
    base, root, _ = served
    write_group_trace(root / "live")
    code, local, _ = await meshrl(monkeypatch, capsys, "", "trace", root / "live", "g-1")
    assert code == 0 and "linked from: learner-0 learner.step (meshrl.step=4)" in local
    code, out, _ = await meshrl(monkeypatch, capsys, VIEWER, "trace", f"{base}/runs/live", "g-1")
    assert code == 0 and out == local
    assert [line.split()[2:4] for line in out.splitlines()[2:5]] == [
        ["learner-0", "learner.publish_prompt"],
        ["rollout-0", "rollout.generate"],
        ["reward-0", "reward.score"],
    ]
    code, _, err = await meshrl(monkeypatch, capsys, VIEWER, "trace", f"{base}/runs/live", "g-9")
    assert code == 2 and "the gateway answered 404: group 'g-9' has no spans" in err and "known groups: g-1" in err
    code, _, err = await meshrl(monkeypatch, capsys, VIEWER, "trace", f"{base}/runs/live")
    assert code == 2 and "give a GROUP_ID with a URL" in err


async def test_plot_through_the_gateway_draws_the_run_dirs_png(served, monkeypatch, capsys, tmp_path):
    base, root, _ = served
    code, _, err = await meshrl(monkeypatch, capsys, VIEWER, "plot", f"{base}/runs/live")
    assert code == 2 and f"the metrics of {base}/runs/live has no steps yet" in err
    rows = [synthetic_row(s) for s in range(1, 41)]
    (root / "live" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    local, remote = tmp_path / "local.png", tmp_path / "remote.png"
    assert (await meshrl(monkeypatch, capsys, "", "plot", root / "live", "--out", local))[0] == 0
    code, out, _ = await meshrl(monkeypatch, capsys, VIEWER, "plot", f"{base}/runs/live", "--out", remote)
    assert code == 0 and out == f"wrote {remote}\n"
    assert png_size(remote) == (1320, 1160)  # all 12 panels, as test_plot's synthetic run
    assert remote.read_bytes() == local.read_bytes()  # same rows, same title: the same picture
    monkeypatch.chdir(tmp_path)
    code, out, _ = await meshrl(monkeypatch, capsys, VIEWER, "plot", f"{base}/runs/live/")
    assert code == 0 and out == "wrote live-metrics.png\n" and (tmp_path / "live-metrics.png").is_file()
