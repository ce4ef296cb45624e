"""LoRA in the learner (PEFT): only the adapters train, the merged weights rollout gets equal
the adapted model's outputs under the base model's names, the final export holds both the
merged model and the adapter (and so does `meshrl export` of a LoRA checkpoint), a checkpoint resumes adapters and their AdamW state exactly;
bad input (a target that matches nothing, a rank too large, lora with several ranks) is a
ConfigError naming the fix."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from meshrl.config import ConfigError, load_config
from meshrl.config.lora import LoraSettings
from meshrl.services.learner import build
from meshrl.services.learner.lora import adapter_state_dict, apply_lora, merged_state_dict
from meshrl.services.learner.train.fsdp import DistContext


def run_config(model_dir, tmp_path, *overrides):
    return load_config(
        base={
            "run": {"dir": str(tmp_path / "run")},
            "model": {"path": str(model_dir)},
            "data": {"train": "t.jsonl"},
            "algorithm": {"preset": "grpo"},
            "trainer": {"precision": "fp32", "optim": {"lr": 0.05}},
        },
        overrides=["model.lora.rank=4", "model.lora.alpha=8", *overrides],
    )


def synthetic_batch(vocab: int):
    from meshrl.algos.batch import RolloutBatch

    g = torch.Generator().manual_seed(0)
    prompts, responses = torch.randint(5, vocab, (4, 6), generator=g), torch.randint(5, vocab, (4, 5), generator=g)
    return RolloutBatch(
        prompt_ids=prompts,
        prompt_mask=torch.ones_like(prompts),
        response_ids=responses,
        response_mask=torch.ones(4, 5),
        rewards=torch.tensor([1.0, 0.0, 1.0, 0.0]),
        group_ids=torch.zeros(4, dtype=torch.long),
        behaviour_logprobs=-torch.ones(4, 5),
    )


def policy_with_trained_adapters(cfg):
    """A LoRA policy whose B matrices are not zero, so the adapter changes the logits."""
    policy, _ = build.build_policy_model(cfg, DistContext())
    for name, p in policy.model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.1)
    return policy


def exported_logits(policy, out, base_dir):
    """Logits of the policy, of the merged model at `out` and of the base + `out/adapter`."""
    from peft import PeftModel

    ids = torch.randint(5, 100, (1, 10))
    with torch.no_grad():
        expected = policy.model(ids).logits
        merged = AutoModelForCausalLM.from_pretrained(out)(ids).logits
        base = AutoModelForCausalLM.from_pretrained(base_dir)
        adapted = PeftModel.from_pretrained(base, out / "adapter")(ids).logits
    return merged, adapted, expected


def test_only_the_adapters_train_and_rollout_gets_the_merged_model(tiny_model_dir, tmp_path):
    cfg = run_config(tiny_model_dir, tmp_path)
    policy, _ = build.build_policy_model(cfg, DistContext())
    base = {k: v.clone() for k, v in policy.model.get_base_model().state_dict().items() if ".lora_" not in k}
    step = build.build_train_step(cfg, policy, None, DistContext())
    step(synthetic_batch(policy.model.config.vocab_size), 0)
    after = policy.model.get_base_model().state_dict()
    assert all(torch.equal(after[k], v) for k, v in base.items())  # the base is frozen
    assert any(not torch.equal(after[k], torch.zeros_like(after[k])) for k in after if "lora_B" in k)  # B moved off 0
    pushed = build.rollout_weights(policy, DistContext())()
    plain = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert set(pushed) == set(plain.state_dict())  # the base model's names
    plain.load_state_dict(pushed)
    ids = torch.randint(5, 100, (2, 12))
    with torch.no_grad():
        assert torch.allclose(plain(ids).logits, policy.model(ids).logits, atol=1e-5)
        with policy.model.disable_adapter():  # the base (reference) is still there, unchanged
            assert torch.allclose(
                AutoModelForCausalLM.from_pretrained(tiny_model_dir)(ids).logits, policy.model(ids).logits, atol=1e-6
            )


def test_final_export_holds_the_merged_model_and_the_adapter(tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer

    cfg = run_config(tiny_model_dir, tmp_path)
    policy = policy_with_trained_adapters(cfg)
    out = build.save_pretrained(
        policy, AutoTokenizer.from_pretrained(tiny_model_dir), DistContext(), tmp_path / "final"
    )
    merged, adapted, expected = exported_logits(policy, out, tiny_model_dir)
    assert torch.allclose(merged, expected, atol=1e-5) and torch.allclose(adapted, expected, atol=1e-5)
    assert (out / "adapter" / "adapter_model.safetensors").stat().st_size < (
        out / "model.safetensors"
    ).stat().st_size / 2


def test_a_checkpoint_resumes_adapters_and_their_optimizer_state(tiny_model_dir, tmp_path):
    from meshrl.services.learner.checkpointing import LearnerCheckpoints

    cfg = run_config(tiny_model_dir, tmp_path)
    batch = synthetic_batch(128)
    policy, _ = build.build_policy_model(cfg, DistContext())
    step = build.build_train_step(cfg, policy, None, DistContext())
    step(batch, 0)
    saved = LearnerCheckpoints(cfg, policy).save(1, {"step": 1, "policy_version": 1, "trained_group_ids": []})
    step(batch, 1)
    expected = adapter_state_dict(policy.model)

    again, _ = build.build_policy_model(cfg, DistContext())
    LearnerCheckpoints(cfg, again).restore_if_any(str(saved))
    build.build_train_step(cfg, again, None, DistContext())(batch, 1)
    resumed = adapter_state_dict(again.model)
    assert set(resumed) == set(expected) and all(torch.equal(resumed[k], expected[k]) for k in expected)


def test_meshrl_export_of_a_lora_checkpoint_writes_the_merged_model_and_the_adapter(tiny_model_dir, tmp_path):
    from meshrl.inputs.checkpoint.export import export_hf
    from meshrl.services.learner.checkpointing import LearnerCheckpoints

    cfg = run_config(tiny_model_dir, tmp_path)
    policy = policy_with_trained_adapters(cfg)
    saved = LearnerCheckpoints(cfg, policy).save(1, {"step": 1, "policy_version": 1, "trained_group_ids": []})
    out = export_hf(saved, tmp_path / "export")  # what `meshrl export RUN_DIR OUT --step 1` does
    merged, adapted, expected = exported_logits(policy, out, tiny_model_dir)
    assert torch.allclose(merged, expected, atol=1e-5) and torch.allclose(adapted, expected, atol=1e-5)


def test_a_target_that_matches_nothing_names_the_layers(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    with pytest.raises(
        ConfigError,
        match=r"'qkv' matches no linear layer of LlamaForCausalLM; its linear "
        r"layers are: down_proj, gate_proj, k_proj, lm_head, o_proj",
    ):
        apply_lora(model, LoraSettings(target_modules=["q_proj", "qkv"]))


def test_a_rank_as_large_as_the_layer_is_refused(tiny_model_dir):
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)  # hidden 64, kv 2 × 32 = 64
    with pytest.raises(ConfigError, match=r"model.lora.rank=64 is not below the smaller side of .*choose rank < 64"):
        apply_lora(model, LoraSettings(rank=64))
    assert sum(p.requires_grad for p in apply_lora(model, LoraSettings(rank=8)).parameters()) == 2 * 4 * 2


def test_lora_with_several_ranks_or_a_critic_is_refused(tiny_model_dir, tmp_path):
    with pytest.raises(ConfigError, match="set learner.ranks=1"):
        run_config(tiny_model_dir, tmp_path, "learner.ranks=2")
    with pytest.raises(ConfigError, match="critic"):
        run_config(tiny_model_dir, tmp_path, "algorithm.preset=ppo")
    with pytest.raises(ConfigError, match="target_modules is empty"):
        run_config(tiny_model_dir, tmp_path, "model.lora.target_modules=[]")


def test_merged_equals_peft_merge_and_unload(tiny_model_dir):
    model = apply_lora(
        AutoModelForCausalLM.from_pretrained(tiny_model_dir), LoraSettings(rank=4, target_modules="all-linear")
    )
    for name, p in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.1)
    mine = merged_state_dict(model)
    theirs = model.merge_and_unload().state_dict()
    assert set(mine) == set(theirs) and all(torch.allclose(mine[k], theirs[k], atol=1e-6) for k in theirs)
