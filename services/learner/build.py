"""Everything the learner needs, built from the run config: model, trainer, data, loop.

Kept apart from `main.py` (process concerns) and `loop.py` (the loop itself), so tests
and the DPO path can build the same parts.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from transformers.core_model_loading import revert_weight_conversion

from meshrl.config import RunConfig
from meshrl.config.sampling import logprob_temperature
from meshrl.inputs.checkpoint.dist import broadcast_from_main
from meshrl.inputs.data.preferences import PreferenceDataset
from meshrl.inputs.data.prompts import PromptDataset
from meshrl.inputs.models.load import load_causal_lm, load_tokenizer
from meshrl.inputs.models.precision import resolve_precision
from meshrl.run_layout import RunDir
from meshrl.services.learner.lora import (
    BaseReference,
    adapter_state_dict,
    apply_lora,
    is_lora,
    lora_summary,
    merged_state_dict,
)
from meshrl.services.learner.train.critic import ValueModel, build_critic
from meshrl.services.learner.train.fsdp import DistContext, full_state_dict
from meshrl.services.learner.train.policy import TrainedModel, build_policy
from meshrl.services.learner.train.step import TrainStep

log = logging.getLogger("meshrl.learner")


def build_tokenizer(cfg: RunConfig):
    return load_tokenizer(cfg.model.tokenizer or cfg.model.path, gguf_file=cfg.model.gguf_file)


def build_dataset(cfg: RunConfig, tokenizer) -> PromptDataset:
    """Read, validate and tokenize the prompts; the report is logged before training."""
    dataset = PromptDataset.from_config(cfg.data, tokenizer, seed=cfg.run.seed)
    report = dataset.report()
    log.info("dataset report:\n%s", report)
    RunDir(cfg.run.dir).data_report.write_text(json.dumps(report.to_dict(), indent=2))
    return dataset


def build_pairs(cfg: RunConfig, tokenizer) -> PreferenceDataset:
    """DPO pairs (prompt, chosen, rejected), validated and tokenized before training."""
    pairs = PreferenceDataset.from_file(
        cfg.data.train, tokenizer, max_prompt_tokens=cfg.data.max_prompt_tokens, seed=cfg.run.seed
    )
    log.info("preference dataset report:\n%s", pairs.report())
    return pairs


def build_policy_model(cfg: RunConfig, dist: DistContext) -> tuple[TrainedModel, TrainedModel | None]:
    model = load_causal_lm(cfg.model.path, gguf_file=cfg.model.gguf_file, dtype="float32")
    precision = resolve_precision(cfg.trainer.precision, bf16=cfg.trainer.bf16, device=dist.device)
    precision = broadcast_from_main(precision)  # torchrun ranks: rank 0's choice (`auto` times a probe)
    log.info("training precision %s (fp32 master weights and AdamW state): %s", precision.dtype, precision.reason)
    critic = None
    if cfg.algorithm.critic.enabled:
        critic = build_critic(
            ValueModel.from_causal_lm(model),
            cfg.algorithm.critic,
            cfg.trainer,
            total_steps=cfg.learner.steps,
            dist=dist,
            bf16=precision.bf16,
        )
    if cfg.model.lora is not None:
        model = apply_lora(model, cfg.model.lora)  # base frozen: AdamW holds the adapters only
        log.info("LoRA: %s", lora_summary(model))
    policy = build_policy(model, cfg.trainer, total_steps=cfg.learner.steps, dist=dist, bf16=precision.bf16)
    return policy, critic


def response_token_limit(cfg: RunConfig) -> int:
    """The most response tokens a sample can have: DAPO's overlong limit and Dr. GRPO's
    constant. A multi-turn episode's is its token budget (`rollout.agent.max_episode_tokens`,
    turns and observations), not one turn's `rollout.sampling.max_tokens`."""
    if cfg.environment is not None:
        return cfg.rollout.agent.max_episode_tokens
    return cfg.rollout.sampling.max_tokens


def build_train_step(cfg: RunConfig, policy: TrainedModel, critic, dist: DistContext) -> TrainStep:
    step = plain_train_step(cfg, policy, critic, dist)
    if is_lora(policy.model) and cfg.algorithm.needs_reference and not cfg.algorithm.offline:
        return BaseReference(step)  # reference log-probs from the base, adapter off
    return step


def plain_train_step(cfg: RunConfig, policy: TrainedModel, critic, dist: DistContext) -> TrainStep:
    return TrainStep(
        policy,
        cfg.algorithm,
        cfg.trainer,
        critic=critic,
        dist=dist,
        temperature=logprob_temperature(cfg),
        max_response_len=response_token_limit(cfg),
        max_staleness=cfg.learner.max_staleness,
    )


def rollout_weights(policy: TrainedModel, dist: DistContext, *, adapter_only: bool = False):
    """A function giving the policy's full state dict in the checkpoint's names (what rollout
    engines load); `adapter_only` (LoRA with model.lora.push=adapter): the adapter's tensors
    in PEFT's names instead, which the engines serve as a LoRA adapter.

    On one process these are the live tensors, not a copy: the loop awaits the push before
    the next update touches them, and a 538 MB clone per push is time and memory for nothing."""
    if is_lora(policy.model) and adapter_only:
        return lambda: adapter_state_dict(policy.model)
    if is_lora(policy.model):  # one process (config/schema.py: lora_problems)
        return lambda: checkpoint_format(policy.model.get_base_model(), merged_state_dict(policy.model))
    if not dist.distributed:
        return lambda: checkpoint_format(
            policy.model, {name: t.detach() for name, t in policy.model.state_dict().items()}
        )
    return lambda: checkpoint_format(policy.model, full_state_dict(policy.model, dist))


def checkpoint_format(model, state: dict) -> dict:
    """`state` under the names and shapes of the model's checkpoint files. transformers 5 fuses
    some weights in memory (an MoE layer's experts are one (experts, 2·width, hidden) tensor
    `mlp.experts.gate_up_proj`) and splits them back when saving (`mlp.experts.3.up_proj.weight`);
    vLLM loads checkpoint names. A dense Llama has no conversions: `state` itself comes back."""
    if not state:
        return state  # a follower rank's empty dict
    return revert_weight_conversion(model, state)


def save_pretrained(policy: TrainedModel, tokenizer, dist: DistContext, out_dir: Path) -> Path:
    """A Hugging Face model dir (weights, config, tokenizer) of the current policy; with LoRA
    the merged model there and the adapter alone (PEFT's format) in OUT_DIR/adapter."""
    model = policy.model
    if is_lora(model):
        model.save_pretrained(out_dir / "adapter")
        model, state = model.get_base_model(), merged_state_dict(model)
    else:
        state = full_state_dict(model, dist)
    if dist.is_main:
        out_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out_dir, state_dict=state, safe_serialization=True)
        tokenizer.save_pretrained(out_dir)
        generation = getattr(model, "generation_config", None)
        if generation is not None:
            generation.save_pretrained(out_dir)
    return out_dir
