"""A run whose groups keep being dropped stops, on a real NATS server with a real tiny model
(rollout+reward are the FAKE `seeded_rollout`, answering some tasks as the rollout gives up
on a group: `Group.drop_reason`, no samples).

- an environment that fails every episode after the first step (env_internal): after
  `alerts.dropped_in_a_row.max_groups` groups dropped in a row the learner raises the alert,
  checkpoints the step it trained and stops, naming the reason, an example and the fix —
  it used to republish prompts forever and never finish the step;
- an environment that is unreachable (env_unavailable: an outage, as the reward's): the
  learner throttles to probes, alerts `env_outage`, and after `max_wait_s` stops;
- an outage that ends: it costs its duration, not the dataset: every dropped group's prompt
  goes back to the draw and is trained later, and the run trains exactly the draws it would
  have trained without the outage.
"""

import asyncio
import json
import re
import time
from functools import partial
from pathlib import Path

from meshrl.services.learner.ledger import read_ledger
from tests.services.learner.fakes import make_config, run_once, seeded_rollout

INTERNAL = "env_internal: episode {gid}/0: environment INTERNAL: the tool server crashed"
UNAVAILABLE = "env_unavailable: episode {gid}/0: environment UNAVAILABLE: failed to connect to all addresses"


def failing_after(answered: int, reason: str):
    """drop(): the first `answered` tasks are answered, every later one dropped with `reason`."""
    seen: list = []

    def drop(task) -> str:
        seen.append(task.group_id)
        return reason.format(gid=task.group_id) if len(seen) > answered else ""

    return drop


def alerts_of(cfg) -> list[dict]:
    path = Path(cfg.run.dir) / "alerts.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_groups_dropped_in_a_row_stop_the_run_after_a_checkpoint_naming_the_reason_and_fix(
    tmp_path, tiny_model_dir, nats_url
):
    cfg = make_config(
        tmp_path, tiny_model_dir, "drops", **{"alerts.dropped_in_a_row.max_groups": 6, "learner.checkpoint_every": 0}
    )
    rollout = partial(seeded_rollout, drop=failing_after(2, INTERNAL))  # step 0's 2 groups, then none
    loop, state = await asyncio.wait_for(run_once(cfg, nats_url, rollout=rollout), timeout=170)
    assert loop.step == 1 and loop.saved_step == 1  # the trained step was checkpointed before the stop
    assert (Path(cfg.run.dir) / "checkpoints" / "step_1").is_dir()
    match = re.match(
        r"stopping: (\d+) groups in a row were dropped and none trained \(env_internal ×(\d+)\); "
        r"env_internal \(e\.g\. env_internal: episode \S+/0: environment INTERNAL: the tool server "
        r"crashed\): the environment failed the episodes \(the detail has its message\): read its log "
        r"\(the limit: alerts\.dropped_in_a_row\.max_groups=6; each drop is in groups\.jsonl\)$",
        state.message,
    )
    assert match and match[1] == match[2] and int(match[1]) >= 6, state.message
    ledger = read_ledger(Path(cfg.run.dir) / "groups.jsonl")
    dropped = [e for e in ledger if e["event"] == "dropped" and e["reason"] != "not_sent"]  # not_sent: at the stop
    assert len(dropped) == int(match[1]) and {e["reason"] for e in dropped} == {"env_internal"}
    [alert] = [a for a in alerts_of(cfg) if a["rule"] == "dropped_in_a_row"]
    assert alert["severity"] == "critical" and alert["values"]["dropped"] >= 6
    assert alert["message"].startswith(f"{alert['values']['dropped']} groups in a row were dropped and none trained")


async def test_an_environment_outage_throttles_to_probes_then_stops_after_max_wait(tmp_path, tiny_model_dir, nats_url):
    cfg = make_config(
        tmp_path,
        tiny_model_dir,
        "env-outage",
        **{
            "alerts.env_outage.after_s": 0.3,
            "alerts.env_outage.probe_every_s": 0.3,
            "alerts.env_outage.max_wait_s": 2.5,
            "alerts.dropped_in_a_row.max_groups": 3,
        },
    )  # outage drops do not count towards it
    throttled_at: list[float] = []

    async def watch(bus, state):
        while not state.stopping.is_set():
            if not throttled_at and state.to_proto().message.startswith("waiting for the environment: every group"):
                throttled_at.append(time.time())
            await asyncio.sleep(0.05)

    rollout = partial(seeded_rollout, drop=failing_after(0, UNAVAILABLE), delay_s=0.02)
    loop, state = await asyncio.wait_for(run_once(cfg, nats_url, rollout=rollout, during=watch), timeout=170)
    assert loop.step == 0 and loop.saved_step == -1  # nothing trained: nothing to checkpoint
    assert state.message.startswith(
        "stopping: every group was dropped: its environment could not be reached or did not answer in time for "
    ), state.message
    assert "(the last: env_unavailable: episode " in state.message
    assert state.message.endswith("gave up after alerts.env_outage.max_wait_s=2.5 s")
    published = [e["time"] for e in read_ledger(Path(cfg.run.dir) / "groups.jsonl") if e["event"] == "published"]
    # throttled from the first drop to 2.5 s: one probe per 0.3 s, ≈8; unthrottled, ≈30
    # groups a second went out
    assert throttled_at and 1 <= len([t for t in published if t > throttled_at[0] + 0.1]) <= 12
    assert [a["rule"] for a in alerts_of(cfg) if a["rule"] in ("env_outage", "dropped_in_a_row")] == ["env_outage"]


def outage_of(after: int, lasting: int):
    """drop(): the first `after` tasks answered, the next `lasting` dropped env_unavailable
    (the environment killed), every later one answered again (it came back)."""
    seen: list = []

    def drop(task) -> str:
        seen.append(task.group_id)
        return UNAVAILABLE.format(gid=task.group_id) if after < len(seen) <= after + lasting else ""

    return drop


async def test_an_outage_costs_its_duration_not_the_dataset(tmp_path, tiny_model_dir, nats_url):
    """4 steps × 2 prompts; 6 tasks dropped env_unavailable after the first 3. Before, each drop
    freed its place and a NEW prompt was drawn (≈5.7 passes over the data in a 10 s outage);
    now each dropped draw goes back to the front and is trained later under a new group id."""
    cfg = make_config(tmp_path, tiny_model_dir, "env-back", **{"alerts.env_outage.probe_every_s": 0.1})
    rollout = partial(seeded_rollout, drop=outage_of(3, 6))
    loop, state = await asyncio.wait_for(run_once(cfg, nats_url, rollout=rollout), timeout=400)
    assert loop.step == 4, state.message
    ledger = read_ledger(Path(cfg.run.dir) / "groups.jsonl")
    draw_of = {e["group_id"]: e["draw"] for e in ledger if e["event"] == "published"}
    dropped = [draw_of[e["group_id"]] for e in ledger if e["event"] == "dropped" and e["reason"] == "env_unavailable"]
    trained = sorted(draw_of[e["group_id"]] for e in ledger if e["event"] == "trained")
    assert len(dropped) == 6
    assert trained == list(range(8))  # exactly the draws an outage-free run trains: none burned
    assert set(dropped) <= set(trained)  # every prompt the outage dropped was trained later
    assert max(draw_of.values()) <= 7 + cfg.learner.in_flight_bound  # never drew far past what it trains
