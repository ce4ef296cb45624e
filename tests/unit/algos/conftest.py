"""A tiny random Llama (vocab 64, hidden 32, 2 layers, 2 heads), built in code, seed fixed."""

import pytest
import torch


def build_tiny_llama(seed: int = 0, vocab: int = 64):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab,
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


@pytest.fixture
def tiny_llama():
    return build_tiny_llama()


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models: one intra-op thread is ~10x faster than two on a busy 2-core machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
