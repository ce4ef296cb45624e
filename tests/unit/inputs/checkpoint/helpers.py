"""A tiny Llama (vocab 64, hidden 32, 2 layers), its AdamW + warmup schedule, and a train step.

The step draws its batch from torch's RNG and mixes in python/numpy draws, and attention
dropout is on, so an exact resume needs the RNG states as well as weights and optimizer.
"""

import random

import numpy as np
import torch
from torch.optim.lr_scheduler import LambdaLR

VOCAB, SEQ, BATCH = 64, 8, 2


def tiny_config(**overrides):
    from transformers import LlamaConfig

    kwargs = dict(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        attention_dropout=0.1,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    kwargs.update(overrides)
    return LlamaConfig(**kwargs)


def tiny_model(seed: int = 0, **overrides):
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(tiny_config(**overrides)).to(torch.float32)
    model.config._attn_implementation = "eager"  # deterministic dropout path on CPU
    return model.train()


def trainer(model, lr: float = 1e-2):
    """AdamW (weight decay on) and a 3-step linear warmup."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    return optimizer, LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 3))


def train_step(model, optimizer, scheduler) -> torch.Tensor:
    """One update on a random batch; returns the loss (detached)."""
    ids = torch.randint(3, VOCAB, (BATCH, SEQ))
    ids[:, 0] = 1 + random.randrange(2) + int(np.random.randint(0, 1))
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def weights(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
