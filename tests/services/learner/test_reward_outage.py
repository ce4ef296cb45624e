"""A reward outage on a real NATS server (rollout+reward are the FAKE `seeded_rollout`, whose
rewards are NaN — a failed score — while the test says scoring is down).

- down for a while (until 2.5 s after the learner said it waits for scoring), then back: the alert fires, the feeder sends one probe per `after_s`
  instead of a full in-flight bound, the status says what the run waits for, and the run
  finishes every step by itself once scoring returns;
- down for good: after `max_wait_s` the learner checkpoints nothing (no step yet), stops and
  says why.
"""

import asyncio
import json
import time
from functools import partial
from pathlib import Path

from meshrl.services.learner.ledger import read_ledger
from tests.services.learner.fakes import make_config, run_once, seeded_rollout

OUTAGE = {"alerts.reward_outage.after_s": 0.5, "alerts.reward_outage.max_wait_s": 60}


async def test_an_outage_throttles_prompts_alerts_and_the_run_continues_when_scoring_returns(
    tmp_path, tiny_model_dir, nats_url
):
    cfg = make_config(tmp_path, tiny_model_dir, "outage", **OUTAGE)
    # scoring comes back 2.5 s after the learner said it waits for it (timed from then, not
    # from the start: on a loaded machine the learner may take seconds to start)
    throttled_at: list[float] = []
    messages: set[str] = set()

    async def watch(bus, state):
        while state.step < cfg.learner.steps and not state.stopping.is_set():
            message = state.to_proto().message
            messages.add(message)
            if not throttled_at and message.startswith("waiting for reward scoring"):
                throttled_at.append(time.time())
            await asyncio.sleep(0.05)

    def scoring_down() -> bool:
        return not throttled_at or time.time() < throttled_at[0] + 2.5

    rollout = partial(seeded_rollout, scoring_down=scoring_down, delay_s=0.05)
    loop, state = await run_once(cfg, nats_url, during=watch, rollout=rollout)
    assert loop.step == cfg.learner.steps  # the run finished by itself
    ledger = read_ledger(Path(cfg.run.dir) / "groups.jsonl")
    published = [e["time"] for e in ledger if e["event"] == "published"]
    throttled = [t for t in published if throttled_at[0] + 0.1 <= t <= throttled_at[0] + 2.3]
    # one probe per 0.5 s while throttled (≈5 in 2.2 s); unthrottled, ≈20 groups a second go out
    assert 1 <= len(throttled) <= 8, len(throttled)
    assert any(m.startswith("waiting for reward scoring: every group failed scoring") for m in messages)
    alerts = [json.loads(line) for line in (Path(cfg.run.dir) / "alerts.jsonl").read_text().splitlines()]
    assert [a["rule"] for a in alerts if a["rule"] == "reward_outage"] == ["reward_outage"]
    dropped = [e for e in ledger if e["event"] == "dropped"]
    assert dropped and all(e["reason"] == "failed_reward" for e in dropped)


async def test_an_outage_longer_than_max_wait_stops_the_run_with_a_message(tmp_path, tiny_model_dir, nats_url):
    cfg = make_config(
        tmp_path,
        tiny_model_dir,
        "outage-for-good",
        **{"alerts.reward_outage.after_s": 0.3, "alerts.reward_outage.max_wait_s": 1.5},
    )
    rollout = partial(seeded_rollout, scoring_down=lambda: True, delay_s=0.02)
    loop, state = await asyncio.wait_for(run_once(cfg, nats_url, rollout=rollout), timeout=120)
    assert loop.step == 0
    assert "gave up after alerts.reward_outage.max_wait_s=1.5 s" in state.message
    assert state.message.startswith("stopping: every group failed scoring")
