"""The feeder's draws and a checkpoint taken while a publish is in flight (FAKE bus and dataset);
what a task says about the run's environment, and the response limit an episode has.

A checkpoint saves the dataset cursor and the draws still pending; the draw being published
must be among them, or a resume skips that prompt for good."""

import asyncio
from types import SimpleNamespace

import pytest

from meshrl.config.load import load_config
from meshrl.services.learner.build import response_token_limit
from meshrl.services.learner.feeder import PromptFeeder
from meshrl.services.learner.ledger import Ledger, read_ledger, unsettled_groups

CFG = {
    "model": {"path": "/m"},
    "data": {"train": "/d.jsonl"},
    "algorithm": {"preset": "grpo"},
    "learner": {"steps": 2, "prompts_per_step": 2},
}


class FakeDataset:
    """Ten rows in order; the cursor is a counter."""

    def __init__(self):
        self.cursor = 0

    def next_indices(self, k):
        self.cursor += k
        return list(range(self.cursor - k, self.cursor))

    def __getitem__(self, i):
        row = SimpleNamespace(
            ground_truth=str(i), data_source="fake", ref=SimpleNamespace(index=i), extra_info={}, prompt=f"prompt {i}"
        )
        return SimpleNamespace(text=f"prompt {i}", prompt_ids=[1, 2, i], row=row)

    def state_dict(self):
        return {"cursor": self.cursor}


class BlockedBus:
    """A FAKE bus whose publish waits until released (or fails when told to)."""

    def __init__(self, fail: bool = False):
        self.entered, self.release, self.fail = asyncio.Event(), asyncio.Event(), fail

    async def publish(self, stage, task, **_):
        self.entered.set()
        await self.release.wait()
        if self.fail:
            raise ConnectionError("NATS gone")


def feeder_on(bus, ledger=None):
    return PromptFeeder(bus, FakeDataset(), load_config(base=CFG), "run1", ledger=ledger)


async def test_a_checkpoint_during_a_publish_keeps_the_draw():
    bus = BlockedBus()
    feeder = feeder_on(bus)
    publishing = asyncio.create_task(feeder.publish_next())
    await bus.entered.wait()
    saved = feeder.state_dict()  # what a checkpoint taken now would hold
    assert saved["cursor"] == {"cursor": 1} and saved["next_draw"] == 1
    assert saved["pending"] == [[0, 0]]  # draw 0 (row 0) is pending, not lost
    bus.release.set()
    await publishing
    assert feeder.state.published == 1 and feeder.state_dict()["pending"] == [[0, 0]]


async def test_a_failed_publish_gives_the_draw_back():
    bus = BlockedBus(fail=True)
    feeder = feeder_on(bus)
    bus.release.set()
    with pytest.raises(ConnectionError):
        await feeder.publish_next()
    assert feeder.outstanding == {} and feeder.state.published == 0
    assert feeder.take_draw().number == 0  # the same draw goes out next, not draw 1


async def test_the_ledger_has_the_group_before_nats_does(tmp_path):
    """Written ahead: a learner killed while the publish is in flight (NATS may already hold
    the task) leaves the group published in its ledger, so its successor settles it."""
    bus, path = BlockedBus(), tmp_path / "groups.jsonl"
    feeder = feeder_on(bus, Ledger(path))
    publishing = asyncio.create_task(feeder.publish_next())
    await bus.entered.wait()
    [(group_id, _)] = unsettled_groups(read_ledger(path))
    assert group_id in feeder.outstanding
    bus.release.set()
    await publishing


async def test_a_failed_publish_is_settled_in_the_ledger(tmp_path):
    bus, path = BlockedBus(fail=True), tmp_path / "groups.jsonl"
    feeder = feeder_on(bus, Ledger(path))
    bus.release.set()
    with pytest.raises(ConnectionError):
        await feeder.publish_next()
    events = read_ledger(path)
    assert [e["event"] for e in events] == ["published", "dropped"]
    assert events[1]["reason"] == "not_sent" and unsettled_groups(events) == []


@pytest.mark.parametrize(
    "environment, expected", [(None, ""), ({"name": "tool_arith", "builtin": "tool_arith"}, "tool_arith")]
)
def test_tasks_name_the_runs_environment(environment, expected):
    """With an `environment:` section every task's episodes run in it; without, single-turn."""
    cfg = load_config(base={**CFG, **({"environment": environment} if environment else {})})
    feeder = PromptFeeder(BlockedBus(), FakeDataset(), cfg, "run1")
    assert feeder.make_task(feeder.take_draw()).environment == expected


def test_the_response_limit_of_an_episode_is_its_token_budget():
    """DAPO's overlong limit and Dr. GRPO's constant: one turn's max_tokens for single-turn
    tasks, the episode's budget when the run has an environment."""
    single = load_config(base=CFG, overrides=["rollout.sampling.max_tokens=64"])
    agents = load_config(
        base={**CFG, "environment": {"name": "tool_arith", "builtin": "tool_arith"}},
        overrides=["rollout.sampling.max_tokens=64", "rollout.agent.max_episode_tokens=300"],
    )
    assert (response_token_limit(single), response_token_limit(agents)) == (64, 300)
