"""What a ready group must look like before the learner trusts it with an update.

A group comes off the bus from other processes — other hosts, other teams' reward services,
perhaps a buggy or forged publisher — so its arrays are checked against each other and
against the model before anything is decoded into a batch:

- its policy version is not newer than the learner's own (no replica can sample with
  weights that were never published: a forged weights notice or a stale replay);
- every sample has a response; its behaviour log-probs (and reference log-probs when the
  run uses a reference) have one finite value per response token, and no log-prob is > 0;
- every token id (prompt and response) is inside the vocabulary.

`malformed(group, ...)` returns the first problem as text (logged, and the ledger's reason
is "malformed"), or "" when the group is sound.
"""
from __future__ import annotations

import numpy as np

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus.codec import unpack_float32, unpack_int32


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
    return ""


def _ids_problem(what: str, ids: np.ndarray, vocab_size: int | None) -> str:
    if ids.size and (ids.min() < 0 or (vocab_size is not None and ids.max() >= vocab_size)):
        return f"{what} token id {int(ids.min() if ids.min() < 0 else ids.max())} outside the vocabulary [0, {vocab_size})"
    return ""


def _logprobs_problem(name: str, values: np.ndarray, tokens: int) -> str:
    if values.size != tokens:
        return f"{name} has {values.size} values for {tokens} response tokens"
    if not np.all(np.isfinite(values)) or np.any(values > 1e-4):
        return f"{name} holds a value that is not a log-probability (NaN, inf or > 0)"
    return ""
