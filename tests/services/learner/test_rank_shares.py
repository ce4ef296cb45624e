"""The learner on N ranks, the fast parts: each rank's share of a batch, `learner.ranks` in the
config, and the launcher's command line for it. (The service on 2 real ranks: test_ranks.py.)"""

import subprocess
import sys

import numpy as np
import pytest

from meshrl.algos.batch import RolloutBatch
from meshrl.config import ConfigError, load_config
from meshrl.launch.specs import learner_spec
from meshrl.services.learner.ranks import join, rank_shares

BASE = {"model": {"path": "m"}, "data": {"train": "t.jsonl"}, "learner": {"prompts_per_step": 4}}


def batch_of(group_sizes: list[int]) -> RolloutBatch:
    gids = np.repeat(np.arange(len(group_sizes)), group_sizes)
    rows = len(gids)
    return RolloutBatch.from_sequences(
        [np.array([1, 2])] * rows,
        [np.array([3, 4, 5])] * rows,
        rewards=np.arange(rows, dtype=np.float32),
        group_ids=gids,
        pad_id=0,
    )


def test_each_rank_gets_whole_groups_and_the_same_rows():
    shares = rank_shares(batch_of([4, 4, 4, 4]), 2)
    assert [s.group_ids.tolist() for s in shares] == [[0, 0, 0, 0, 1, 1, 1, 1], [2, 2, 2, 2, 3, 3, 3, 3]]
    assert shares[1].rewards.tolist() == list(range(8, 16))
    assert [len(s.group_ids) for s in rank_shares(batch_of([2, 2, 2]), 3)] == [2, 2, 2]
    assert [s.group_ids.tolist() for s in rank_shares(batch_of([4, 2, 2]), 2)] == [[0] * 4, [1, 1, 2, 2]]


@pytest.mark.parametrize("sizes", [[4, 4, 4], [2, 6], [2, 4, 2]])
def test_a_batch_that_cannot_split_in_whole_equal_groups_is_refused(sizes):
    with pytest.raises(ValueError, match=r"learner.prompts_per_step to a multiple of learner.ranks"):
        rank_shares(batch_of(sizes), 2)


@pytest.mark.parametrize("value", [0, -1, 2.5, True, "two"])
def test_ranks_must_be_a_whole_number_of_at_least_one(value):
    with pytest.raises(ConfigError, match=r"learner.ranks=.*whole number 1..64"):
        load_config(base=BASE, overrides=[f"learner.ranks={value}"])


def test_ranks_must_divide_the_groups_of_a_step_and_train_online():
    assert load_config(base=BASE, overrides=["learner.ranks=2"]).learner.ranks == 2
    assert load_config(base=BASE).learner.ranks == 1
    with pytest.raises(ConfigError, match=r"learner.ranks=3 needs learner.prompts_per_step \(now 4\)"):
        load_config(base=BASE, overrides=["learner.ranks=3"])
    with pytest.raises(ConfigError, match=r"offline preference training runs on one rank"):
        load_config(base=BASE, overrides=["learner.ranks=2", "algorithm.preset=dpo"])


def test_the_launcher_runs_torchrun_for_more_than_one_rank(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    one = learner_spec(load_config(base=BASE))
    two = learner_spec(load_config(base=BASE, overrides=["learner.ranks=2", "learner.stop_grace_s=90.5"]))
    assert one.launcher == [sys.executable]
    assert two.launcher == [
        sys.executable,
        "-m",
        "meshrl.services.learner.ranks_run",
        "--standalone",
        "--nproc-per-node=2",
        "--shutdown-timeout=91",
    ]
    assert int(two.env["OMP_NUM_THREADS"]) == max(1, int(one.env["OMP_NUM_THREADS"]) // 2)


@pytest.mark.parametrize("code, want", [(2, 2), (3, 1)])
def test_the_learners_torchrun_passes_on_a_ranks_exit_code_2(tmp_path, code, want):
    """2 = bad config, data, model or checkpoint: the launcher does not restart it (plain torchrun says 1)."""
    rank = tmp_path / "rank.py"
    rank.write_text(f"import sys\nsys.exit({code})\n")
    done = subprocess.run(
        [sys.executable, "-m", "meshrl.services.learner.ranks_run", "--standalone", "--nproc-per-node=1", str(rank)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == want, done.stderr[-2000:]


def test_the_ranks_torchrun_started_must_be_learner_ranks(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert join(1).world_size == 1  # a plain process: no process group
    with pytest.raises(ConfigError, match=r"learner.ranks=2, but torchrun started 1 rank\(s\).*set learner.ranks: 1"):
        join(2)
