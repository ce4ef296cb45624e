"""A vLLM `CompletionOutput` as the proto `Sample` the learner trains on, with the policy
version that sampled it (see `engine.py`'s docstring, "Policy versions" and "LoRA").

Pure Python (no vLLM): the engine and the agent's episodes (`agent/episode.py`) both convert
completions here, and `tests/services/rollout/test_parts.py` tests it on plain objects.
"""

from __future__ import annotations

import numpy as np

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus.codec import pack_float32, pack_int32

ADAPTER_PREFIX = "policy-v"
FINISH_REASONS = {"stop": pb.FINISH_REASON_STOP, "length": pb.FINISH_REASON_LENGTH, "abort": pb.FINISH_REASON_ABORT}


def oldest_version(spans, fallback: int) -> int:
    """The oldest weights version among a sample's `weight_versions` spans (vLLM sets them
    on the final output); `fallback` when the engine reported none."""
    versions = [int(span.version) for span in spans or () if str(span.version).isdigit()]
    return min(versions, default=fallback)


def adapter_name(version: int, serial: int) -> str:
    """The LoRA name of a pushed adapter: its version, and a serial unique in this engine (a
    version pushed again after a resume is another adapter)."""
    return f"{ADAPTER_PREFIX}{version}-{serial}"


def completion_version(completion, fallback: int) -> int:
    """The policy version that sampled `completion`: its adapter's when it ran with one (every
    token of it did), else the oldest of its weight-version spans (`oldest_version`)."""
    lora = getattr(completion, "lora_request", None)
    if lora is not None and lora.lora_name.startswith(ADAPTER_PREFIX):
        return int(lora.lora_name.removeprefix(ADAPTER_PREFIX).split("-")[0])
    return oldest_version(completion.weight_versions, fallback)


def sample_from_completion(completion, fallback_version: int) -> pb.Sample:
    """One proto `Sample` from a vLLM `CompletionOutput` requested with `logprobs=0`, flat."""
    token_ids = np.asarray(completion.token_ids, dtype=np.int32)
    flat = completion.logprobs
    if flat is None or len(flat.logprobs) != len(token_ids):
        got = None if flat is None else len(flat.logprobs)
        raise RuntimeError(
            f"vLLM returned {got} log-probs for {len(token_ids)} tokens; the "
            f"request must use logprobs=0 with flat_logprobs=True"
        )
    return pb.Sample(
        index=completion.index,
        response_token_ids=pack_int32(token_ids),
        behaviour_logprobs=pack_float32(np.asarray(flat.logprobs, dtype=np.float32)),
        response_text=completion.text,
        finish_reason=FINISH_REASONS.get(completion.finish_reason, pb.FINISH_REASON_UNSPECIFIED),
        policy_version=completion_version(completion, fallback_version),
    )
