"""Training batches as tensors: what the learner trains on and the reference scores.

A `RolloutBatch` holds B sampled sequences as two padded blocks:

    prompt_ids   [B, P]  LEFT-padded   (so every prompt ends at column P-1)
    response_ids [B, T]  RIGHT-padded  (so every response starts at column P)

A response may hold tokens the model did not write: in a multi-turn episode the
environment's observations sit between the model's turns. `response_mask` marks every real
response token (the model attends to all of them); `loss_mask` only the model's own tokens
(what is trained on, scored and counted), with holes where the observations are.

Concatenated, `input_ids()` is `[B, P+T]` and the response token at column t is predicted
by the logits at position P-1+t, the same for every row. That fixed offset is what lets
`meshrl.algos.logprobs` gather response log-probs with one slice instead of per-row
indexing. Positions come from the attention mask (cumsum), so left padding does not shift
RoPE positions.

A `PreferenceBatch` (DPO) holds a prompt with a chosen and a rejected response, both
padded to the same width, and turns into one `RolloutBatch` of 2B rows (chosen first) so
both halves go through the model in one forward.

Simplifications: tensors live on one device; no packing of several sequences per row.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from meshrl.algos.checks import ShapeError

# Per-row fields: (name, dims). "B" is the batch, "P" the prompt width, "T" the response width.
_ROLLOUT_DIMS = {
    "prompt_ids": "B P",
    "prompt_mask": "B P",
    "response_ids": "B T",
    "response_mask": "B T",
    "rewards": "B",
    "group_ids": "B",
    "behaviour_logprobs": "B T",
    "ref_logprobs": "B T",
    "policy_versions": "B",
    "reward_components": "B K",
    "reward_component_weights": "B K",
    "greedy_rewards": "B",
    "loss_mask": "B T",
    "turn_rewards": "B T",
}


def pad_left(seqs: Sequence[np.ndarray], pad_value, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Stack 1-D arrays into `[B, max_len]`, padded on the left; return (values, 0/1 mask).

    Vectorised: the True cells of the mask, read row by row, are exactly the concatenation
    of the sequences in order, so one boolean-mask assignment fills every row.
    """
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    width = int(lengths.max(initial=0))
    mask = np.arange(width)[None, :] >= (width - lengths)[:, None]
    out = np.full((len(seqs), width), pad_value, dtype=dtype)
    if width:
        out[mask] = np.concatenate([np.asarray(s, dtype=dtype) for s in seqs])
    return out, mask


def pad_right(seqs: Sequence[np.ndarray], pad_value, dtype, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Stack 1-D arrays into `[B, width]` (default: longest), padded on the right."""
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    width = int(lengths.max(initial=0)) if width is None else width
    if lengths.size and lengths.max() > width:
        raise ShapeError(f"a sequence of length {int(lengths.max())} does not fit width {width}")
    mask = np.arange(width)[None, :] < lengths[:, None]
    out = np.full((len(seqs), width), pad_value, dtype=dtype)
    if width:
        out[mask] = np.concatenate([np.asarray(s, dtype=dtype) for s in seqs])
    return out, mask


def _check_dims(owner: str, tensors: dict[str, torch.Tensor | None], dims: dict[str, str]) -> None:
    """Raise ShapeError naming every tensor and its shape unless all named dims agree."""
    bound: dict[str, int] = {}
    for name, tensor in tensors.items():
        if tensor is None:
            continue
        spec = dims[name].split()
        ok = tensor.dim() == len(spec) and all(bound.setdefault(d, size) == size for d, size in zip(spec, tensor.shape))
        if not ok:
            listing = ", ".join(f"{n}={tuple(t.shape)} [{dims[n]}]" for n, t in tensors.items() if t is not None)
            raise ShapeError(
                f"{owner}.{name} has shape {tuple(tensor.shape)}, expected "
                f"[{dims[name]}] with {bound}. All shapes: {listing}"
            )


class _Rows:
    """Row-wise indexing shared by the batch dataclasses: every tensor field has B rows."""

    def _tensor_fields(self) -> dict[str, torch.Tensor]:
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if isinstance(getattr(self, f.name), torch.Tensor)
        }

    @property
    def batch_size(self) -> int:
        return next(iter(self._tensor_fields().values())).shape[0]

    def __len__(self) -> int:
        return self.batch_size

    def select(self, index):
        """The rows `index` (a slice, an int64 tensor of row ids, or a bool mask) as a new batch."""
        return dataclasses.replace(self, **{k: v[index] for k, v in self._tensor_fields().items()})

    def split(self, size: int) -> list:
        """Consecutive micro-batches of at most `size` rows (like `torch.split`)."""
        if size < 1:
            raise ValueError(f"split size must be >= 1, got {size}")
        return [self.select(slice(i, i + size)) for i in range(0, self.batch_size, size)]

    def chunk(self, n: int) -> list:
        """`n` consecutive parts of (nearly) equal size, larger first (like `np.array_split`)."""
        if not 1 <= n <= self.batch_size:
            raise ValueError(f"cannot cut {self.batch_size} rows into {n} parts; need 1 <= parts <= batch size")
        sizes = [self.batch_size // n + (i < self.batch_size % n) for i in range(n)]
        bounds = np.cumsum([0] + sizes)
        return [self.select(slice(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]

    def to(self, device):
        return dataclasses.replace(self, **{k: v.to(device) for k, v in self._tensor_fields().items()})


@dataclass
class RolloutBatch(_Rows):
    """B sampled sequences: left-padded prompts, right-padded responses, rewards, groups.

    `response_mask` is float 0/1 (1 = a real response token: attended to). `loss_mask` is
    float 0/1 (1 = the model's own token: trained on), inside `response_mask`; it has holes
    where an episode's observations are and equals `response_mask` for single-turn samples
    (the default when none is given). Every loss, advantage, KL, entropy and length reads
    `loss_mask`; only the model's forward reads `response_mask`. `behaviour_logprobs`
    are the rollout engine's log-probs of the sampled tokens (for rollout correction),
    `ref_logprobs` the reference model's; both 0 on padding, never NaN.
    `reward_components` [B, K] are the reward's components (the reward service's
    `Sample.reward_components`, columns in name order) and `reward_component_weights` their
    configured weights, the same on every row (for multi-reward estimators such as `gdpo`).
    `greedy_rewards` [B]: the reward of the greedy response to each row's prompt (the same
    on every row of a group; ReMax's baseline, `Group.greedy_sample`).
    `turn_rewards` [B, T]: the part of `rewards` an episode's environment gave per turn, at
    the last model token of each turn (`services/learner/turn_credit.py`); `rewards` stays
    the episode's total, the training step hands this part to the estimator per token.
    """

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    response_ids: torch.Tensor
    response_mask: torch.Tensor
    rewards: torch.Tensor
    group_ids: torch.Tensor
    behaviour_logprobs: torch.Tensor | None = None
    ref_logprobs: torch.Tensor | None = None
    policy_versions: torch.Tensor | None = None
    reward_components: torch.Tensor | None = None
    reward_component_weights: torch.Tensor | None = None
    greedy_rewards: torch.Tensor | None = None
    loss_mask: torch.Tensor | None = None  # None = response_mask (no observation tokens)
    turn_rewards: torch.Tensor | None = None  # [B, T] part of `rewards` earned per turn

    def __post_init__(self):
        if self.loss_mask is None:
            self.loss_mask = self.response_mask
        _check_dims(type(self).__name__, {k: getattr(self, k) for k in _ROLLOUT_DIMS}, _ROLLOUT_DIMS)
        if self.group_ids.dtype != torch.int64:
            raise ShapeError(f"group_ids must be int64, got {self.group_ids.dtype}")
        for name in ("response_mask", "loss_mask"):
            if not getattr(self, name).is_floating_point():
                raise ShapeError(f"{name} must be float 0/1, got {getattr(self, name).dtype}; pass mask.float()")
        if self.loss_mask is not self.response_mask and bool((self.loss_mask > self.response_mask).any()):
            raise ShapeError(
                "loss_mask marks a padding column as a model token: it must lie "
                "inside response_mask (0 wherever response_mask is 0)"
            )

    @property
    def prompt_len(self) -> int:
        return self.prompt_ids.shape[1]

    @property
    def response_len(self) -> int:
        return self.response_ids.shape[1]

    def input_ids(self) -> torch.Tensor:
        """`[B, P+T]`: prompt then response."""
        return torch.cat([self.prompt_ids, self.response_ids], dim=1)

    def attention_mask(self) -> torch.Tensor:
        """`[B, P+T]` int64, 1 on real tokens."""
        return torch.cat([self.prompt_mask.long(), self.response_mask.long()], dim=1)

    def position_ids(self) -> torch.Tensor:
        """`[B, P+T]`: 0 at each row's first real token, counting real tokens (cumsum - 1)."""
        return (self.attention_mask().cumsum(dim=1) - 1).clamp(min=0)

    def response_lengths(self) -> torch.Tensor:
        """[B] the model's own tokens per row (observation tokens are not counted)."""
        return self.loss_mask.sum(dim=1)

    @classmethod
    def from_sequences(
        cls,
        prompts: Sequence[np.ndarray],
        responses: Sequence[np.ndarray],
        rewards,
        group_ids,
        pad_id: int,
        *,
        behaviour_logprobs: Sequence[np.ndarray] | None = None,
        ref_logprobs: Sequence[np.ndarray] | None = None,
        policy_versions=None,
        loss_masks: Sequence[np.ndarray] | None = None,
    ) -> "RolloutBatch":
        """Pad token-id arrays into a batch (per-token floats padded with 0 like the ids).

        `loss_masks`: one 0/1 array per response (1 = the model's token; an empty array
        means all 1, as `Sample.loss_mask`); None = every response token is the model's."""
        _one_per_sample(prompts, responses, rewards, group_ids)
        ids = _padded_ids(prompts, responses, pad_id)
        width = ids["response_ids"].shape[1]
        return cls(
            **ids,
            rewards=_host(rewards, np.float32),
            group_ids=_host(group_ids, np.int64),
            behaviour_logprobs=_per_token(behaviour_logprobs, width),
            ref_logprobs=_per_token(ref_logprobs, width),
            policy_versions=_host(policy_versions, np.int64),
            loss_mask=None if loss_masks is None else _per_token(_full_masks(loss_masks, responses), width),
        )


def _one_per_sample(prompts, responses, rewards, group_ids) -> None:
    if not len(prompts) == len(responses) == len(rewards) == len(group_ids):
        raise ShapeError(
            f"from_sequences got {len(prompts)} prompts, {len(responses)} "
            f"responses, {len(rewards)} rewards, {len(group_ids)} group ids; "
            f"they must be equal (one per sample)"
        )


def _padded_ids(prompts, responses, pad_id: int) -> dict[str, torch.Tensor]:
    """Prompts left-padded and responses right-padded (`meshrl.algos.batch`'s layout), with their masks."""
    prompt_ids, prompt_mask = pad_left(prompts, pad_id, np.int64)
    response_ids, response_mask = pad_right(responses, pad_id, np.int64)
    return dict(
        prompt_ids=torch.from_numpy(prompt_ids),
        prompt_mask=torch.from_numpy(prompt_mask).long(),
        response_ids=torch.from_numpy(response_ids),
        response_mask=torch.from_numpy(response_mask).float(),
    )


def _per_token(seqs, width: int) -> torch.Tensor | None:
    """Per-token floats right-padded with 0 to the responses' width, like their ids."""
    return None if seqs is None else torch.from_numpy(pad_right(seqs, 0.0, np.float32, width)[0])


def _host(values, dtype) -> torch.Tensor | None:
    """Per-row values as a CPU tensor: batches are built on the host and moved as a whole."""
    return None if values is None else torch.as_tensor(np.asarray(values, dtype=dtype), device="cpu")


def _full_masks(loss_masks: Sequence[np.ndarray], responses: Sequence[np.ndarray]) -> list[np.ndarray]:
    """One 0/1 mask per response, its length; an empty mask means all 1 (`Sample.loss_mask`)."""
    if len(loss_masks) != len(responses):
        raise ShapeError(
            f"from_sequences got {len(loss_masks)} loss masks for {len(responses)} "
            f"responses; give one per response (empty = all model tokens)"
        )
    full = [np.ones(len(r)) if len(m) == 0 else np.asarray(m) for m, r in zip(loss_masks, responses)]
    for row, (mask, response) in enumerate(zip(full, responses)):
        if len(mask) != len(response):
            raise ShapeError(
                f"loss mask {row} has {len(mask)} values for {len(response)} response tokens; give one per token"
            )
    return full


_PREFERENCE_DIMS = {
    "prompt_ids": "B P",
    "prompt_mask": "B P",
    "chosen_ids": "B T",
    "chosen_mask": "B T",
    "rejected_ids": "B T",
    "rejected_mask": "B T",
    "ref_chosen_logps": "B",
    "ref_rejected_logps": "B",
}


@dataclass
class PreferenceBatch(_Rows):
    """B preference pairs for DPO: one prompt, a chosen and a rejected response.

    Both responses are right-padded to the same width T. `ref_chosen_logps` /
    `ref_rejected_logps` [B] are the reference model's summed response log-probs,
    precomputed once (the reference service or a pass before training).
    """

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    chosen_ids: torch.Tensor
    chosen_mask: torch.Tensor
    rejected_ids: torch.Tensor
    rejected_mask: torch.Tensor
    ref_chosen_logps: torch.Tensor | None = None
    ref_rejected_logps: torch.Tensor | None = None

    def __post_init__(self):
        _check_dims(type(self).__name__, {k: getattr(self, k) for k in _PREFERENCE_DIMS}, _PREFERENCE_DIMS)

    def stacked(self) -> RolloutBatch:
        """One RolloutBatch of 2B rows: the B chosen rows, then the B rejected rows."""
        b, device = self.batch_size, self.prompt_ids.device
        return RolloutBatch(
            prompt_ids=self.prompt_ids.repeat(2, 1),
            prompt_mask=self.prompt_mask.repeat(2, 1),
            response_ids=torch.cat([self.chosen_ids, self.rejected_ids]),
            response_mask=torch.cat([self.chosen_mask, self.rejected_mask]).float(),
            rewards=torch.zeros(2 * b, device=device),
            group_ids=torch.arange(b, dtype=torch.int64, device=device).repeat(2),
        )

    def halves(self) -> tuple[RolloutBatch, RolloutBatch]:
        """(chosen, rejected) as two RolloutBatches of B rows sharing the prompts."""
        stacked = self.stacked()
        return stacked.select(slice(0, self.batch_size)), stacked.select(slice(self.batch_size, None))

    @classmethod
    def from_sequences(
        cls,
        prompts: Sequence[np.ndarray],
        chosen: Sequence[np.ndarray],
        rejected: Sequence[np.ndarray],
        pad_id: int,
        *,
        ref_chosen_logps=None,
        ref_rejected_logps=None,
    ) -> "PreferenceBatch":
        if not len(prompts) == len(chosen) == len(rejected):
            raise ShapeError(
                f"from_sequences got {len(prompts)} prompts, {len(chosen)} chosen, "
                f"{len(rejected)} rejected; they must be equal (one per pair)"
            )
        prompt_ids, prompt_mask = pad_left(prompts, pad_id, np.int64)
        width = max((len(s) for s in [*chosen, *rejected]), default=0)
        chosen_ids, chosen_mask = pad_right(chosen, pad_id, np.int64, width)
        rejected_ids, rejected_mask = pad_right(rejected, pad_id, np.int64, width)
        return cls(
            torch.from_numpy(prompt_ids),
            torch.from_numpy(prompt_mask).long(),
            torch.from_numpy(chosen_ids),
            torch.from_numpy(chosen_mask).float(),
            torch.from_numpy(rejected_ids),
            torch.from_numpy(rejected_mask).float(),
            _host(ref_chosen_logps, np.float32),
            _host(ref_rejected_logps, np.float32),
        )
