"""rollout.tensor_parallel_size: each vLLM worker gets its own core group; the split must fit
the model's heads (bad input names what fits); the plan divides a replica's weights and KV
cache over its workers; the collective transport is refused with TP > 1."""

import json

import pytest

from meshrl.config import ConfigError, load_config
from meshrl.launch.cores import plan_cores, worker_groups
from meshrl.launch.specs import replica_spec
from meshrl.plan.parallel import tensor_parallel_problem


def test_each_worker_binds_its_own_cores():
    plan = plan_cores([0, 1], mode="shared")
    assert plan.rollout_env(tensor_parallel=2) == {"VLLM_CPU_OMP_THREADS_BIND": "0|1", "OMP_NUM_THREADS": "1"}
    assert plan.rollout_env() == {"VLLM_CPU_OMP_THREADS_BIND": "0,1", "OMP_NUM_THREADS": "2"}
    assert worker_groups((0, 1, 2, 3), 2) == [(0, 2), (1, 3)]
    assert worker_groups((0,), 2) == [(0,), (0,)]  # more workers than cores: they share


def config(model_dir, *overrides):
    return load_config(
        base={"model": {"path": str(model_dir)}, "data": {"train": "t.jsonl"}}, overrides=list(overrides)
    )


def test_the_launcher_gives_a_tp_replica_one_group_per_worker(tiny_model_dir, monkeypatch):
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    monkeypatch.setattr("meshrl.launch.specs.usable_cores", lambda: [0, 1])
    spec = replica_spec("rollout", 0, config(tiny_model_dir, "rollout.tensor_parallel_size=2", "launch.cores=shared"))
    assert spec.env["VLLM_CPU_OMP_THREADS_BIND"].count("|") == 1


def write_config(tmp_path, heads, kv_heads):
    (tmp_path / "config.json").write_text(json.dumps({"num_attention_heads": heads, "num_key_value_heads": kv_heads}))
    return str(tmp_path)


def test_tp_must_split_the_heads(tmp_path):
    model = write_config(tmp_path, 4, 2)
    assert tensor_parallel_problem(model, 1) is None and tensor_parallel_problem(model, 2) is None
    assert tensor_parallel_problem(model, 4) is None  # 2 KV heads copied to 4 workers
    assert tensor_parallel_problem(model, 3) == (
        "rollout.tensor_parallel_size=3 cannot split the model's 4 "
        "attention heads (2 KV heads) evenly over 3 workers; choose one of 1, 2, 4"
    )
    assert "choose one of 1, 2, 4" in tensor_parallel_problem(model, 8)  # more workers than heads


def test_a_rollout_replica_refuses_a_tp_that_does_not_fit(tiny_model_dir):
    from meshrl.services.rollout.engine_config import EngineConfig

    with pytest.raises(ConfigError, match="tensor_parallel_size=3 cannot split"):
        EngineConfig.from_run_config(config(tiny_model_dir, "rollout.tensor_parallel_size=3"))
    assert (
        EngineConfig.from_run_config(config(tiny_model_dir, "rollout.tensor_parallel_size=2")).tensor_parallel_size == 2
    )


def test_the_collective_transport_is_refused_with_tp(tiny_model_dir):
    with pytest.raises(ConfigError, match="use shm or objectstore"):
        config(tiny_model_dir, "rollout.tensor_parallel_size=2", "learner.weights_transport=collective")


def test_the_plan_splits_a_replica_over_its_workers(tiny_model_dir):
    from meshrl.plan.report import memory_plan

    one = {s.service: s for s in memory_plan(config(tiny_model_dir)).services}["rollout"]
    two = {s.service: s for s in memory_plan(config(tiny_model_dir, "rollout.tensor_parallel_size=2")).services}[
        "rollout"
    ]
    assert two.devices == 2 and two.per_device * 2 == pytest.approx(one.per_device, abs=2)
