"""LoRA adapter push on a real vLLM engine (model.lora.push: adapter) with tensor parallelism
(TP=2, so the adapter reaches both workers' shards): the learner's adapter file, verified and
unpacked by the rollout's WeightsUpdater, is served by vLLM's LoRA support;
the samples' behaviour log-probs equal an HF + PEFT forward of the learner's model, they
differ from the base's, each sample carries its adapter's version, and a second push
replaces the first. An adapter notice to an engine started without LoRA is refused.

One small LoRA engine for this module (the session engine stays LoRA-free for the others);
a TP=1 engine serves adapters in tests/e2e/test_mesh_lora.py.
Run: .venv/bin/python -m pytest tests/services/rollout/test_lora_adapter.py -m slow
"""

import os

import numpy as np
import pytest
import pytest_asyncio
import torch
from transformers import AutoModelForCausalLM

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.config.lora import LoraSettings
from meshrl.services.learner.lora import adapter_config_json, adapter_state_dict, apply_lora
from meshrl.services.learner.weights import WeightsPublisher
from meshrl.transport.bus.codec import unpack_float32, unpack_int32
from meshrl.transport.weights.send import ShmTransport
from meshrl.transport.weights.update import WeightsUpdater
from tests.fixtures.vllm import prompt_task

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def lora_engine(tiny_model_dir):
    """A LoRA engine spanning two workers (rollout.tensor_parallel_size=2), bound as the
    launcher binds such a replica: the adapter must reach both shards."""
    from meshrl.launch.cores import plan_cores
    from meshrl.services.rollout.engine import EngineConfig, RolloutEngine

    binding = plan_cores(sorted(os.sched_getaffinity(0))).rollout_env(tensor_parallel=2)
    saved = {name: os.environ.get(name) for name in binding}
    os.environ.update(binding)  # read by vLLM's processes as they start
    try:
        engine = await RolloutEngine.start(
            EngineConfig(
                model=str(tiny_model_dir),
                max_model_len=256,
                kv_cache_gb=0.125,
                replica_id="rollout-lora",
                max_lora_rank=8,
                tensor_parallel_size=2,
            )
        )
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
    yield engine
    engine.shutdown()


def learner_model(model_dir, seed: int):
    """The learner's PEFT model after some steps: B moved off 0 (a fixed seed)."""
    model = apply_lora(
        AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
        LoraSettings(rank=8, alpha=16, target_modules=["q_proj", "v_proj", "o_proj"]),
    )
    torch.manual_seed(seed)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.3)
    return model.eval()


async def push(model, version: int, transport) -> pb.WeightsNotice:
    """What the learner's publisher writes and announces for `version` (the KV put aside)."""
    publisher = WeightsPublisher(None, transport, "test-run", adapter_config=adapter_config_json(model))
    notice, _ = await publisher.deliver(publisher.stage(adapter_state_dict(model)), version, step=version)
    return notice


def forward_logprobs(model, prompt, response, adapter: bool = True) -> np.ndarray:
    ids = torch.tensor([list(prompt) + list(response)])
    with torch.no_grad():
        if adapter:
            logits = model(ids).logits
        else:
            with model.disable_adapter():
                logits = model(ids).logits
    picked = torch.log_softmax(logits[0, len(prompt) - 1 : -1], -1).gather(-1, torch.tensor(response)[:, None].long())
    return picked[:, 0].numpy()


async def test_a_pushed_adapter_is_served_with_the_learners_logprobs(lora_engine, tiny_model_dir, tmp_path):
    transport = ShmTransport("test-run", root=str(tmp_path))
    reports = []

    async def publish(report):
        reports.append(report)

    updater = WeightsUpdater(
        lora_engine, run_id="test-run", replica_id="rollout-lora", publish_loaded=publish, cache_dir=tmp_path
    )
    assert lora_engine.llm.vllm_config.parallel_config.tensor_parallel_size == 2  # two shards to reach
    task = prompt_task(lora_engine.tokenizer, "2+3=", n=2, max_tokens=8, seed=11)
    prompt = unpack_int32(task.prompt_token_ids)
    try:
        for version, seed in ((1, 1), (2, 2)):  # the second push replaces the first
            model = learner_model(tiny_model_dir, seed)
            report = await updater.apply(await push(model, version, transport))
            assert report.ok, report.error
            assert lora_engine.version == version
            group = await lora_engine.generate_group(task)
            assert group.policy_version == version
            for sample in group.samples:
                ids = unpack_int32(sample.response_token_ids)
                served = unpack_float32(sample.behaviour_logprobs)
                assert sample.policy_version == version
                np.testing.assert_allclose(served, forward_logprobs(model, prompt, ids), atol=1e-4)
                assert np.abs(served - forward_logprobs(model, prompt, ids, adapter=False)).max() > 1e-2
    finally:
        updater.close()
        transport.close()
    assert [r.version for r in reports] == [1, 2]


async def test_an_adapter_to_an_engine_without_lora_is_refused(base_rollout_engine, tiny_model_dir, tmp_path):
    transport = ShmTransport("test-run", root=str(tmp_path))
    updater = WeightsUpdater(base_rollout_engine, run_id="test-run", replica_id="rollout-test", cache_dir=tmp_path)
    try:
        report = await updater.apply(await push(learner_model(tiny_model_dir, 1), 1, transport))
    finally:
        updater.close()
        transport.close()
    assert not report.ok and "started without LoRA" in report.error
    assert base_rollout_engine.version == 0
