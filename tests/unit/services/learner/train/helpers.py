"""Shared pieces for the learner's training-step tests: a tiny Llama and random batches.

Imported as `tests.unit.services.learner.train.helpers` (also by the FSDP test's spawned ranks).
"""

import numpy as np
import torch

from meshrl.algos.batch import RolloutBatch

VOCAB = 64


def build_tiny_llama(seed: int = 0):
    """LlamaForCausalLM: vocab 64, hidden 32, 2 layers, 2 heads, tied embeddings; fixed seed."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        tie_word_embeddings=True,
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config).float()


def random_batch(
    n: int = 8, group_size: int = 4, seed: int = 0, with_ref: bool = True, with_behaviour: bool = True
) -> RolloutBatch:
    """n samples in groups of `group_size`, ragged prompts (2-5) and responses (1-6)."""
    rng = np.random.default_rng(seed)
    prompts = [rng.integers(1, VOCAB, rng.integers(2, 6)) for _ in range(n)]
    responses = [rng.integers(1, VOCAB, rng.integers(1, 7)) for _ in range(n)]
    per_token = lambda base: [base + 0.1 * rng.standard_normal(len(r)) for r in responses]  # noqa: E731
    return RolloutBatch.from_sequences(
        prompts,
        responses,
        rewards=rng.random(n),
        group_ids=np.arange(n) // group_size + 100,
        pad_id=0,
        ref_logprobs=per_token(-4.2) if with_ref else None,
        behaviour_logprobs=per_token(-4.1) if with_behaviour else None,
    )


def weights_of(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
