"""The frozen reference model: per-token log-probs of response tokens given their prompts.

    ref_logprob[t] = log_softmax(logits_ref(prompt, response[:t]) / T)[response[t]]

computed by `meshrl.algos.logprobs.response_logprobs`, the very function the learner uses
for the policy, so the KL term `log π - log π_ref` compares numbers made the same way (same
padding layout, positions, temperature T and float32 log-softmax). The model is loaded
once, in eval mode, with gradients off; batches are cut into micro-batches of
`reference.micro_batch_size` sequences, sorted by length first so each micro-batch pads
little.

Simplifications: one device (CPU or the first CUDA device); no sequence packing.
"""

from __future__ import annotations

import logging
import threading
from typing import Sequence

import numpy as np
import torch

from meshrl.algos.batch import RolloutBatch
from meshrl.algos.head_plan import chunk_elements_for
from meshrl.algos.logprobs import response_logprobs
from meshrl.config.sampling import logprob_temperature  # re-exported: one rule for all
from meshrl.config.schema import RunConfig
from meshrl.inputs.models.load import load_causal_lm
from meshrl.inputs.models.precision import resolve_model_dtype

log = logging.getLogger(__name__)


class ReferenceScorer:
    """Holds the frozen model; `score(prompts, responses)` → float32 log-prob arrays."""

    def __init__(self, model: torch.nn.Module, *, micro_batch_size: int = 8, temperature: float = 1.0, pad_id: int = 0):
        if micro_batch_size < 1:
            raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
        self.model = model.eval().requires_grad_(False)
        self.device = next(model.parameters()).device
        self.micro_batch_size, self.temperature, self.pad_id = micro_batch_size, temperature, pad_id
        self.vocab_size = model.get_input_embeddings().num_embeddings
        # LM-head chunks sized for this device once (a share of free memory on CUDA)
        self.chunk_elements = chunk_elements_for(self.device)
        self._lock = threading.Lock()  # one forward at a time: the NATS worker and gRPC share it

    @classmethod
    def from_config(cls, cfg: RunConfig) -> "ReferenceScorer":
        device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype, why = resolve_model_dtype(cfg.model.dtype, device=device)
        log.info("reference dtype %s: %s", dtype, why)
        model = load_causal_lm(cfg.model.path, gguf_file=cfg.model.gguf_file, dtype=dtype)
        if torch.cuda.is_available():
            model = model.to("cuda")
        pad_id = model.config.pad_token_id if model.config.pad_token_id is not None else 0
        return cls(
            model,
            micro_batch_size=cfg.reference.micro_batch_size,
            temperature=logprob_temperature(cfg),
            pad_id=int(pad_id),
        )

    def score(self, prompts: Sequence[np.ndarray], responses: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One float32 array per sequence, `len(responses[i])` long, in the order given."""
        if len(prompts) != len(responses):
            raise ValueError(
                f"score got {len(prompts)} prompts and {len(responses)} responses; pass one prompt per response"
            )
        self.check_token_ids(prompts, responses)
        lengths = np.array([len(p) + len(r) for p, r in zip(prompts, responses)], dtype=np.int64)
        order = np.argsort(lengths, kind="stable")
        out: list[np.ndarray] = [np.zeros(0, np.float32)] * len(prompts)
        with self._lock:
            for start in range(0, len(order), self.micro_batch_size):
                rows = order[start : start + self.micro_batch_size]
                scored = self._score_micro([prompts[i] for i in rows], [responses[i] for i in rows])
                for i, values in zip(rows, scored):
                    out[i] = values
        return out

    def check_token_ids(self, prompts: Sequence[np.ndarray], responses: Sequence[np.ndarray]) -> None:
        """ValueError unless every prompt is non-empty and every id is in [0, vocab_size)."""
        if any(len(p) == 0 for p in prompts):
            raise ValueError("a prompt has no tokens; the first response token needs a prompt to follow")
        ids = np.concatenate([*prompts, *responses]) if len(prompts) else np.zeros(0, np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            raise ValueError(
                f"token ids must lie in [0, {self.vocab_size}) for this reference "
                f"model; got min {ids.min()}, max {ids.max()} (a different tokenizer?)"
            )

    def _score_micro(self, prompts: Sequence[np.ndarray], responses: Sequence[np.ndarray]) -> list[np.ndarray]:
        n = len(prompts)
        batch = RolloutBatch.from_sequences(
            prompts, responses, rewards=np.zeros(n, np.float32), group_ids=np.zeros(n, np.int64), pad_id=self.pad_id
        ).to(self.device)
        with torch.inference_mode():
            logprobs = response_logprobs(
                self.model, batch, temperature=self.temperature, chunk_elements=self.chunk_elements
            ).logprobs
        mask = batch.response_mask.bool()
        flat = logprobs[mask].float().cpu().numpy()  # row-major: row 0's tokens, then row 1's ...
        lengths = np.array([len(r) for r in responses], dtype=np.int64)
        return np.split(flat, np.cumsum(lengths)[:-1])
