"""The version a prompt asks for (version_ask.py), against hand-computed cases, and the feeder
using it (FAKE bus and dataset: only what is published is looked at)."""

import asyncio
from types import SimpleNamespace

import pytest

from meshrl.config.load import load_config
from meshrl.services.learner.feeder import PromptFeeder
from meshrl.services.learner.version_ask import landing_step, min_policy_version, pushes_between

CFG = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}, "algorithm": {"preset": "grpo"}}


class FakeDataset:
    """A FAKE dataset: row i is "prompt i", taken in order."""

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


@pytest.mark.parametrize(
    "trained, ahead, P, step", [(0, 0, 4, 0), (0, 3, 4, 0), (0, 4, 4, 1), (12, 7, 4, 4), (12, 8, 4, 5)]
)
def test_landing_step(trained, ahead, P, step):
    assert landing_step(trained=trained, ahead=ahead, prompts_per_step=P) == step


@pytest.mark.parametrize(
    "now, then, every, pushes", [(3, 3, 1, 0), (3, 4, 1, 1), (3, 5, 1, 2), (2, 4, 2, 1), (3, 4, 2, 1), (2, 3, 2, 0)]
)
def test_pushes_between(now, then, every, pushes):
    assert pushes_between(now, then, every) == pushes


def ask(version, trained, ahead, P=4, push_every=1, k=1):
    return min_policy_version(
        version=version, trained=trained, ahead=ahead, prompts_per_step=P, push_every=push_every, max_staleness=k
    )


def test_on_policy_asks_for_the_current_version():
    assert [ask(0, 0, a, k=0) for a in range(4)] == [0] * 4
    assert [ask(1, 4, a, k=0) for a in range(4)] == [1] * 4


def test_the_issue_case_asks_for_v_not_v_minus_1():
    # max_staleness 1, bound 8: right after v3 is pushed (12 trained) the 4 groups of step 3
    # are in flight; the 4 new prompts land in step 4, trained at v4, which accepts v3 only.
    assert [ask(3, 12, a) for a in range(4, 8)] == [3, 3, 3, 3]  # the old rule said 2


def test_the_first_prompts_of_an_async_run_take_the_base_model():
    assert [ask(0, 0, a) for a in range(8)] == [0] * 8


def test_a_replacement_lands_at_the_back_of_the_queue():
    assert ask(3, 12, 7) == 3  # 7 ahead: step 4 (v4) → v3
    assert ask(3, 12, 3) == 2  # 3 ahead (a smaller bound): step 3 (v3) → v2


def test_push_every_two():
    assert ask(1, 4, 5, P=2, push_every=2) == 1  # step 4: one more push (after step 3) → v2 - 1
    assert ask(1, 4, 1, P=2, push_every=2) == 0  # step 2: no push before it → v1 - 1
    assert ask(1, 4, 5, P=2, push_every=2, k=2) == 0


def test_never_more_than_the_version_held():
    # An in-flight bound beyond one step with max_staleness 0: step 3 would train at v3, but
    # only v2 exists; asking for v3 would park the prompt until a replica times out.
    assert ask(2, 8, 5, k=0) == 2


class RecordingBus:
    """A FAKE bus: remembers every task published."""

    def __init__(self):
        self.tasks = []

    async def publish(self, stage, task, **_):
        self.tasks.append(task)


def test_the_feeder_asks_each_cohort_for_the_version_of_its_step():
    cfg = load_config(base={**CFG, "learner": {"steps": 4, "prompts_per_step": 2, "max_staleness": 1}})
    bus = RecordingBus()
    feeder = PromptFeeder(bus, FakeDataset(), cfg, "run1")

    async def fill():
        while feeder.state.in_flight < feeder.wanted():
            await feeder.publish_next()

    asyncio.run(fill())  # v0: 4 prompts (steps 0 and 1)
    for version in (1, 2):  # a step trains the oldest two, pushes, settles them
        feeder.set_version(version)
        feeder.settle([t.group_id for t in bus.tasks[2 * (version - 1) : 2 * version]], trained=True)
        asyncio.run(fill())
    assert [t.min_policy_version for t in bus.tasks] == [0, 0, 0, 0, 1, 1, 2, 2]
