"""Which cores the local launcher gives rollout and the learner (cores.py, local.py)."""

import pytest

from meshrl.config.load import load_config
from meshrl.launch import cores as cores_module
from meshrl.launch.cores import plan_cores, replica_cores
from meshrl.launch.specs import service_specs

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}, "algorithm": {"preset": "dapo"}}


def test_on_policy_shares_every_core_and_binds_vllm_to_all_of_them():
    plan = plan_cores([0, 1], mode="auto", max_staleness=0)
    assert plan.mode == "shared"
    assert plan.rollout_env() == {"VLLM_CPU_OMP_THREADS_BIND": "0,1", "OMP_NUM_THREADS": "2"}
    assert plan.trainer_env() == {"OMP_NUM_THREADS": "2"}  # not pinned: it has them all


def test_split_gives_disjoint_halves_and_pins_each_side():
    assert plan_cores([0, 1, 2, 3], mode="auto", max_staleness=1).mode == "shared"  # measured faster
    plan = plan_cores([0, 1, 2, 3], mode="split", max_staleness=1)
    assert plan.mode == "split"
    assert plan.rollout_env() == {"VLLM_CPU_OMP_THREADS_BIND": "0,1", "OMP_NUM_THREADS": "2"}
    assert plan.trainer_env() == {"OMP_NUM_THREADS": "2", "GOMP_CPU_AFFINITY": "2 3"}


def test_async_on_one_core_shares_it_and_split_there_is_refused():
    assert plan_cores([3], max_staleness=2).mode == "shared"
    with pytest.raises(ValueError, match="split needs at least 2 cores.*launch.cores=shared"):
        plan_cores([3], mode="split")
    with pytest.raises(ValueError, match="launch.cores='half'; choose one of auto, shared, split"):
        plan_cores([0, 1], mode="half")


def test_shared_mode_forced_for_an_async_run():
    assert plan_cores([0, 1], mode="shared", max_staleness=1).rollout_env()["OMP_NUM_THREADS"] == "2"


def test_rollout_replicas_take_turns_over_the_rollout_cores():
    assert [replica_cores((0, 1, 2, 3), i, 2) for i in range(2)] == [(0, 2), (1, 3)]
    assert replica_cores((0, 1), 1, 3) == (0, 1)  # more replicas than cores: all share


def test_launcher_env_per_mode(monkeypatch):
    for var in ("OMP_NUM_THREADS", "VLLM_CPU_OMP_THREADS_BIND", "GOMP_CPU_AFFINITY", "GLIBC_TUNABLES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cores_module, "usable_cores", lambda: [0, 1])
    monkeypatch.setattr("meshrl.launch.specs.usable_cores", lambda: [0, 1])
    on_policy = {s.name: s.env for s in service_specs(load_config(base=BASE))}
    assert on_policy["rollout"]["VLLM_CPU_OMP_THREADS_BIND"] == "0,1"
    assert on_policy["learner"]["OMP_NUM_THREADS"] == "2" and on_policy["reward"]["OMP_NUM_THREADS"] == "1"
    split = {**BASE, "learner": {"max_staleness": 1}, "launch": {"cores": "split"}}
    asynchronous = {s.name: s.env for s in service_specs(load_config(base=split))}
    assert asynchronous["rollout"]["VLLM_CPU_OMP_THREADS_BIND"] == "0"
    assert asynchronous["learner"] == {
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
        "GOMP_CPU_AFFINITY": "1",
        "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1",
    }
    assert "GLIBC_TUNABLES" not in on_policy["rollout"] and "GLIBC_TUNABLES" not in on_policy["reward"]
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")  # the operator's tunables are kept
    learner = [s for s in service_specs(load_config(base=BASE)) if s.name == "learner"][0]
    assert learner.env["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    monkeypatch.delenv("GLIBC_TUNABLES")
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "nobind")  # the user's own setting wins
    assert "VLLM_CPU_OMP_THREADS_BIND" not in service_specs(load_config(base=BASE))[0].env


def test_rollout_cores_sets_the_split():
    plan = plan_cores([0, 1, 2, 3], mode="split", max_staleness=1, rollout_cores=3)
    assert plan.rollout == (0, 1, 2) and plan.trainer == (3,)
    assert plan.rollout_env() == {"VLLM_CPU_OMP_THREADS_BIND": "0,1,2", "OMP_NUM_THREADS": "3"}
    assert plan.trainer_env() == {"OMP_NUM_THREADS": "1", "GOMP_CPU_AFFINITY": "3"}


def test_a_split_that_leaves_a_side_no_core_is_named():
    problem = cores_module.core_split_problem([0, 1], mode="split", rollout_cores=2)
    assert problem == (
        "launch.rollout_cores=2 leaves the learner no core of the 2 this process may use ([0, 1]); "
        "give rollout at most 1"
    )
    with pytest.raises(ValueError, match="leaves the learner no core"):
        plan_cores([0, 1], mode="split", rollout_cores=5)
    tp = cores_module.core_split_problem([0, 1, 2, 3], mode="split", tensor_parallel=4)
    assert tp.startswith(
        "rollout.tensor_parallel_size=4 needs a core per worker, launch.cores=split gives rollout 2 of 4"
    )
    assert cores_module.core_split_problem([0, 1, 2, 3], mode="split", rollout_cores=2, tensor_parallel=2) is None
    assert cores_module.core_split_problem([0], mode="shared", tensor_parallel=2) is None  # workers share the core


def test_rollout_cores_needs_the_split_mode():
    with pytest.raises(ValueError, match="launch.rollout_cores=1 splits the cores, but launch.cores=auto"):
        load_config(base=BASE, overrides=["launch.rollout_cores=1"])
    assert load_config(base=BASE, overrides=["launch.cores=split", "launch.rollout_cores=1"]).launch.rollout_cores == 1
