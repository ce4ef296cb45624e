"""Hidden states at the positions that predict response tokens, three ways, same values.

For a batch laid out as in `meshrl.algos.batch` (prompts left-padded to width P, responses
right-padded to width T), `response_hidden` returns `[B, T, H]`: row b, column t holds the
decoder's last hidden state at the position predicting `response_ids[b, t]` (P-1+t in the
padded layout). The LM head is applied afterwards, only on real response tokens
(`meshrl.algos.logprobs.head_logprobs`), so no logits are ever computed for the prompt.

- `padded`: one forward of `[B, P+T]`, positions from the attention mask.
- `shared_prefix`: the samples of a GRPO group share their prompt. Each distinct prompt
  runs once (with a KV cache); the cache is index-selected to the B rows and the
  responses run on top of it. Gradients flow through the cache into the prompt's forward
  (its keys and values depend on the weights), summed over the rows sharing it by the
  index-select's backward: the same gradient as running the prompt B times.
- `packed`: all real tokens of the batch in one row `[1, N]`, no padding; position ids
  restart at 0 per sequence and transformers turns such position ids (with no attention
  mask) into a block-diagonal causal mask, so attention stays inside each sequence. The
  sequences' boundaries are passed too (`cu_seq_lens_q`, ...): with `trainer.attention:
  varlen` (`meshrl.algos.varlen_attention`) or flash-attention no N×N mask is built.

Fallbacks (to `padded`, same result): `shared_prefix` when no two rows share a prompt or
when gradient checkpointing is on under autograd (checkpointed layers do not return a
cache). `split_head` returns None for models whose logits are not `lm_head(hidden)`
(soft-capping, logit scaling) or whose parameters are FSDP2-sharded (calling the decoder
and head separately would bypass the root module's unshard hook); the caller then uses the
model's own forward.

Simplifications: Hugging Face decoder-only models (`get_decoder()`, `get_output_embeddings()`).
"""

from __future__ import annotations

import torch

SCALED_LOGITS = ("final_logit_softcapping", "logit_scale", "logits_scaling")


def split_head(model):
    """(decoder, lm_head) when logits are exactly `lm_head(decoder(...).last_hidden_state)`."""
    get_decoder = getattr(model, "get_decoder", None)
    get_head = getattr(model, "get_output_embeddings", None)
    if get_decoder is None or get_head is None:
        return None
    config = getattr(model, "config", None)
    if any(getattr(config, name, None) not in (None, 1.0) for name in SCALED_LOGITS):
        return None
    decoder, head = get_decoder(), get_head()
    if decoder is None or not isinstance(head, torch.nn.Linear) or decoder is model:
        return None
    if any(type(p).__name__ == "DTensor" for p in model.parameters()):
        return None
    return decoder, head


def response_hidden(
    decoder, prompt_ids, prompt_mask, response_ids, response_mask, forward: str = "padded"
) -> torch.Tensor:
    """`[B, T, H]` hidden states predicting each response column (module docstring)."""
    if forward == "shared_prefix":
        return shared_prefix_hidden(decoder, prompt_ids, prompt_mask, response_ids, response_mask)
    if forward == "packed":
        return packed_hidden(decoder, prompt_ids, prompt_mask, response_ids, response_mask)
    return padded_hidden(decoder, prompt_ids, prompt_mask, response_ids, response_mask)


def padded_hidden(decoder, prompt_ids, prompt_mask, response_ids, response_mask) -> torch.Tensor:
    input_ids = torch.cat([prompt_ids, response_ids], dim=1)
    attention_mask = torch.cat([prompt_mask.long(), response_mask.long()], dim=1)
    position_ids = (attention_mask.cumsum(dim=1) - 1).clamp(min=0)
    hidden = decoder(
        input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
    ).last_hidden_state
    p, t = prompt_ids.shape[1], response_ids.shape[1]
    return hidden[:, p - 1 : p + t - 1]


def shared_prefix_hidden(decoder, prompt_ids, prompt_mask, response_ids, response_mask):
    """Each distinct prompt once; its KV cache index-selected to the rows that share it."""
    p, t = prompt_ids.shape[1], response_ids.shape[1]
    key = torch.cat([prompt_ids, prompt_mask.long()], dim=1)
    unique, rows = torch.unique(key, dim=0, return_inverse=True)
    checkpointed = getattr(decoder, "gradient_checkpointing", False) and torch.is_grad_enabled()
    if unique.shape[0] == key.shape[0] or checkpointed or t == 0:
        return padded_hidden(decoder, prompt_ids, prompt_mask, response_ids, response_mask)
    u_ids, u_mask = unique[:, :p], unique[:, p:]
    out = decoder(
        input_ids=u_ids, attention_mask=u_mask, position_ids=(u_mask.cumsum(dim=1) - 1).clamp(min=0), use_cache=True
    )
    last = out.last_hidden_state[:, -1][rows].unsqueeze(1)  # predicts response column 0
    if t == 1:
        return last
    cache = out.past_key_values
    cache.reorder_cache(rows)  # index_select per layer: backward sums the rows' gradients
    # The last response token predicts nothing: feed columns 0..T-2 only.
    attention_mask = torch.cat([prompt_mask.long(), response_mask[:, :-1].long()], dim=1)
    position_ids = u_mask.sum(dim=1)[rows].unsqueeze(1) + torch.arange(t - 1, device=rows.device)
    rest = decoder(
        input_ids=response_ids[:, :-1],
        attention_mask=attention_mask,
        position_ids=position_ids,
        past_key_values=cache,
        use_cache=True,
    ).last_hidden_state
    return torch.cat([last, rest], dim=1)


def packed_hidden(decoder, prompt_ids, prompt_mask, response_ids, response_mask) -> torch.Tensor:
    """All real tokens in one row, positions restarting per sequence; scattered back to [B, T, H]."""
    real = torch.cat([prompt_mask, response_mask], dim=1) > 0
    input_ids = torch.cat([prompt_ids, response_ids], dim=1)
    positions = real.long().cumsum(dim=1) - 1
    bounds, longest = sequence_bounds(real.sum(dim=1))  # read by varlen / flash attention
    hidden = decoder(
        input_ids=input_ids[real].unsqueeze(0),
        position_ids=positions[real].unsqueeze(0),
        use_cache=False,
        cu_seq_lens_q=bounds,
        cu_seq_lens_k=bounds,
        max_length_q=longest,
        max_length_k=longest,
    ).last_hidden_state[0]
    b, width = real.shape
    grid = hidden.new_zeros((b, width, hidden.shape[-1])).index_put(real.nonzero(as_tuple=True), hidden)
    p, t = prompt_ids.shape[1], response_ids.shape[1]
    return grid[:, p - 1 : p + t - 1]


def sequence_bounds(lengths: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(cumulative lengths [S+1] int32 on lengths' device, the longest) for `cu_seq_lens_q` (meshrl.algos.varlen_attention)."""
    bounds = torch.zeros(lengths.numel() + 1, dtype=torch.int32, device=lengths.device)
    bounds[1:] = lengths.cumsum(0)
    return bounds, int(lengths.max()) if lengths.numel() else 0
