"""Alert rules inside the learner's loop (real NATS, real tiny model, FAKE seeded rollout).

A rule made to fire on the first step (grad norm watched by the kl_high rule with a bound
no real grad norm stays under) with action `stop` makes the loop checkpoint and stop; with
action `pause` it checkpoints and pauses until resumed. Each alert lands in the log sinks:
RUN_DIR/alerts.jsonl and the run's NATS events subject; the action it took is audited
(RUN_DIR/audit.jsonl and the events subject, who = "alert:<rule>").
"""

import asyncio
import json
from pathlib import Path

from meshrl.api.common.v1 import common_pb2
from meshrl.inputs.checkpoint import list_checkpoints
from meshrl.transport.bus import subjects as names
from tests.services.learner.fakes import make_config, run_once

FIRES_AT_ONCE = {
    "alerts.kl_high.metric": "grad_norm",
    "alerts.kl_high.max_kl": 1e-12,
    "alerts.kl_high.consecutive_steps": 1,
}


def alert_rows(run_dir) -> list[dict]:
    return [json.loads(x) for x in (Path(run_dir) / "alerts.jsonl").read_text().splitlines()]


async def test_a_stop_alert_checkpoints_and_stops_the_run(tmp_path, tiny_model_dir, nats_url):
    cfg = make_config(tmp_path, tiny_model_dir, "stop", **FIRES_AT_ONCE, **{"alerts.kl_high.action": "stop"})
    published = []

    async def listen(bus, state):  # the events subject, from the learner's own connection
        async def keep(msg):
            published.append(msg)

        sub = await bus.nc.subscribe(names.events_subject(bus.run_id), cb=keep)
        await state.stopping.wait()
        await asyncio.sleep(0.5)
        await sub.unsubscribe()

    loop, state = await run_once(cfg, nats_url, during=listen)
    assert loop.step == 1 and state.stopping.is_set() and "kl_high" in state.message
    assert [c.step for c in list_checkpoints(cfg.run.dir)] == [1]
    rows = alert_rows(cfg.run.dir)
    assert [(r["rule"], r["action"], r["step"]) for r in rows] == [("kl_high", "stop", 0)]
    alerts = [m for m in published if m.headers["Meshrl-Event"] == "alert"]
    assert [json.loads(m.data)["rule"] for m in alerts] == ["kl_high"]
    # the action it took is audited like an operator's: who = the rule, in audit.jsonl and on the subject
    (audit,) = [json.loads(x) for x in (Path(cfg.run.dir) / "audit.jsonl").read_text().splitlines()]
    assert (audit["who"], audit["action"], audit["step"], audit["checkpoint_step"]) == ("alert:kl_high", "stop", 1, 1)
    assert [json.loads(m.data) for m in published if m.headers["Meshrl-Event"] == "audit"] == [audit]


async def test_a_pause_alert_checkpoints_then_waits_for_resume(tmp_path, tiny_model_dir, nats_url):
    cfg = make_config(
        tmp_path, tiny_model_dir, "pause", **FIRES_AT_ONCE, **{"alerts.kl_high.action": "pause", "learner.steps": 2}
    )
    seen = {}

    async def resume_when_paused(bus, state):
        while state.state != common_pb2.RUN_STATE_PAUSED:
            await asyncio.sleep(0.05)
        seen["message"], seen["step"] = state.message, state.step
        seen["checkpoints"] = [c.step for c in list_checkpoints(cfg.run.dir)]
        await asyncio.sleep(1.0)
        seen["step_while_paused"] = state.step
        state.resume()

    loop, state = await run_once(cfg, nats_url, during=resume_when_paused)
    assert seen["message"].startswith("paused: alert: kl_high") and seen["step"] == 1
    assert seen["checkpoints"] == [1] and seen["step_while_paused"] == 1  # no step while paused
    assert loop.step == 2 and not state.stopping.is_set()
