"""What a ready group must look like before the learner trusts it with an update.

A group comes off the bus from other processes — other hosts, other teams' reward services,
perhaps a buggy or forged publisher — so its arrays are checked against each other and
against the model before anything is decoded into a batch:

- its policy version is not newer than the learner's own (no replica can sample with
  weights that were never published: a forged weights notice or a stale replay);
- every sample has a response; its behaviour log-probs (and reference log-probs when the
  run uses a reference) have one finite value per response token, and no log-prob is > 0;
- every token id (prompt and response) is inside the vocabulary;
- a multi-turn episode's `loss_mask` (empty = all 1) has one 0/1 value per response token
  and at least one 1 (a model token to train on); its behaviour log-probs are 0 at the
  observation tokens (0), as the contract says — anything else means the mask and the
  log-probs are misaligned;
- its `turns` lie inside the response, in order, each turn's tokens marked 1 and its
  observation's tokens marked 0 (`observation_end` 0 = no observation).

`malformed(group, ...)` returns the first problem as text (logged, and the ledger's reason
is "malformed"), or "" when the group is sound.
"""

from __future__ import annotations

import numpy as np

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus.codec import unpack_float32, unpack_int32, unpack_uint8


def malformed(group: common_pb2.Group, *, vocab_size: int | None, need_ref: bool) -> str:
    prompt = unpack_int32(group.task.prompt_token_ids)
    if problem := _ids_problem("prompt", prompt, vocab_size):
        return problem
    for sample in group.samples:
        if problem := _sample_problem(sample, vocab_size, need_ref):
            return f"sample {sample.index}: {problem}"
    return ""


def _sample_problem(sample: common_pb2.Sample, vocab_size: int | None, need_ref: bool) -> str:
    response = unpack_int32(sample.response_token_ids)
    if response.size == 0:
        return "empty response"
    if problem := _ids_problem("response", response, vocab_size):
        return problem
    arrays = {"behaviour_logprobs": sample.behaviour_logprobs}
    if need_ref:
        arrays["ref_logprobs"] = sample.ref_logprobs
    for name, packed in arrays.items():
        if problem := _logprobs_problem(name, unpack_float32(packed), response.size):
            return problem
    mask = unpack_uint8(sample.loss_mask)
    if problem := _mask_problem(mask, response.size, unpack_float32(sample.behaviour_logprobs)):
        return problem
    return _turns_problem(sample.turns, mask if mask.size else np.ones(response.size, np.uint8))


def _mask_problem(mask: np.ndarray, tokens: int, behaviour: np.ndarray) -> str:
    """What is wrong with a loss mask ("" when sound; empty = all model tokens)."""
    if mask.size == 0:
        return ""
    if mask.size != tokens:
        return (
            f"loss_mask has {mask.size} values for {tokens} response tokens; give one per "
            f"response token (or none for a single-turn sample)"
        )
    if (bad := np.flatnonzero(mask > 1)).size:
        return (
            f"loss_mask holds {int(mask[bad[0]])} at token {int(bad[0])}; only 0 (observation) "
            f"and 1 (model token) are allowed"
        )
    if not mask.any():
        return "loss_mask is all 0: the episode has no model token to train on"
    if (bad := np.flatnonzero((mask == 0) & (behaviour != 0))).size:
        return (
            f"behaviour_logprobs is {float(behaviour[bad[0]]):g} at observation token "
            f"{int(bad[0])} (loss_mask 0), not 0: mask and log-probs are misaligned"
        )
    return ""


def _turns_problem(turns, mask: np.ndarray) -> str:
    """What is wrong with a sample's turn spans against its loss mask ("" when sound)."""
    previous_end = 0
    for position, turn in enumerate(turns):
        start, end = turn.token_start, turn.token_end
        obs_end = turn.observation_end or end  # 0: the turn had no observation
        where = f"turn {position}"
        if turn.index != position:
            return f"{where} has index {turn.index}; turns must be numbered 0, 1, ... in order"
        if not previous_end <= start <= end <= obs_end <= mask.size:
            return (
                f"{where} spans tokens [{start}, {end}) and its observation [{end}, {obs_end}), "
                f"outside the response's {mask.size} tokens or before the previous turn's "
                f"end {previous_end}"
            )
        if (bad := np.flatnonzero(mask[start:end] == 0)).size:
            return f"{where}'s tokens [{start}, {end}) include observation token {start + int(bad[0])} (loss_mask 0)"
        if (bad := np.flatnonzero(mask[end:obs_end] == 1)).size:
            return f"{where}'s observation [{end}, {obs_end}) includes model token {end + int(bad[0])} (loss_mask 1)"
        previous_end = obs_end
    return ""


def _ids_problem(what: str, ids: np.ndarray, vocab_size: int | None) -> str:
    if ids.size and (ids.min() < 0 or (vocab_size is not None and ids.max() >= vocab_size)):
        return (
            f"{what} token id {int(ids.min() if ids.min() < 0 else ids.max())} outside the vocabulary [0, {vocab_size})"
        )
    return ""


def _logprobs_problem(name: str, values: np.ndarray, tokens: int) -> str:
    if values.size != tokens:
        return f"{name} has {values.size} values for {tokens} response tokens"
    if not np.all(np.isfinite(values)) or np.any(values > 1e-4):
        return f"{name} holds a value that is not a log-probability (NaN, inf or > 0)"
    return ""
