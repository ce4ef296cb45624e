"""meshrl/topology.py, the one table of stages and service kinds: the pipeline it spells is the
one the design card draws, each stage has one consumer and every stage is produced and consumed
by known kinds, and the questions the rest of the code asks it come out as written there.

    .venv/bin/python -m pytest -q tests/unit/test_topology.py
"""

import pytest

from meshrl import topology


def test_the_pipeline_runs_from_the_learner_back_to_the_learner():
    path, kind = [], "learner"
    while (out := topology.output_stage(kind)) and len(path) < 10:
        path.append(out)
        kind = topology.stage(out).consumer
        if kind == "learner":
            break
    assert path == ["prompts", "generated", "scored", "ready"]
    assert [topology.consumed_stage(k) for k in ("rollout", "reward", "reference", "learner")] == path


def test_without_a_reference_reward_publishes_ready():
    assert topology.output_stage("reward", reference_enabled=True) == "scored"
    assert topology.output_stage("reward", reference_enabled=False) == "ready"
    assert topology.output_stage("reference", reference_enabled=False) == "ready"


def test_every_stage_names_known_kinds_and_each_kind_pulls_at_most_one():
    for stage in topology.STAGE_TABLE:
        assert {stage.consumer, *stage.producers} <= set(topology.KINDS), stage
    consumers = [s.consumer for s in topology.STAGE_TABLE]
    assert len(consumers) == len(set(consumers))


def test_grpc_only_kinds_are_on_no_stage():
    for name in ("reward_model", "environment"):
        assert topology.consumed_stage(name) is None and topology.output_stage(name) is None


def test_ports_are_distinct_and_names_are_dns_labels():
    ports = [k.grpc_port for k in topology.KIND_TABLE]
    assert len(set(ports)) == len(ports) and topology.METRICS_PORT not in ports
    assert topology.KINDS["reward_model"].dns_name == "reward-model"


def test_who_scales_is_watched_and_holds_which_secret():
    assert "learner" not in topology.scalable() and "learner" not in topology.watched()
    assert set(topology.watched()) == set(topology.KINDS) - {"learner"}
    assert topology.holders(topology.TLS) == (*topology.KINDS, topology.ADMIN)
    assert topology.holders(topology.CHECKPOINT_KEY) == ("learner",)


@pytest.mark.parametrize("call", [lambda: topology.kind("rewards"), lambda: topology.stage("scoring")])
def test_an_unknown_name_is_refused_naming_the_allowed(call):
    with pytest.raises(ValueError, match="allowed"):
        call()


def test_each_stage_carries_a_message_of_the_common_contract():
    from meshrl.api.common.v1 import common_pb2

    carried = {s.name: getattr(common_pb2, s.message).DESCRIPTOR.full_name for s in topology.STAGE_TABLE}
    group = "meshrl.common.v1.Group"
    assert carried == {"prompts": "meshrl.common.v1.PromptTask", "generated": group, "scored": group, "ready": group}


@pytest.mark.parametrize("kind", topology.KIND_TABLE, ids=lambda k: k.name)
def test_each_kind_offers_a_service_of_the_contract_and_its_callers_are_kinds(kind):
    import importlib

    package, _, service = kind.grpc_service.rpartition(".")
    area = package.split(".")[1]
    module = importlib.import_module(f"meshrl.api.{area}.v1.{area}_pb2")
    assert module.DESCRIPTOR.package == package and service in module.DESCRIPTOR.services_by_name
    assert set(kind.callers) <= set(topology.KINDS) - {kind.name}
