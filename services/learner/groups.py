"""From ready `Group` messages to a `RolloutBatch`, plus the checks a group must pass.

The learner trains on exactly the token ids the rollout produced: prompt ids come from the
task it published, response ids and behaviour log-probs from the engine, both decoded
from packed little-endian arrays without re-tokenizing anything. A multi-turn episode's
`Sample.loss_mask` (1 = the model's token, 0 = an observation) becomes the batch's
`loss_mask`: everything is trained and counted on the model's own tokens only.

A group the rollout could not finish (`Group.drop_reason`, e.g. an environment that timed
out) is never trained: its reason is a short code made from the text (`rollout_drop_reason`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass

import numpy as np
import torch

from meshrl.algos.batch import RolloutBatch
from meshrl.api.common.v1 import common_pb2
from meshrl.services.learner.group_checks import malformed
from meshrl.services.learner.turn_credit import turn_reward_matrix
from meshrl.transport.bus.codec import unpack_float32, unpack_int32, unpack_uint8


@dataclass
class Verdict:
    keep: bool
    reason: str = ""  # why a group was dropped: "stale", "failed_reward", "no_signal", ...
    detail: str = ""  # for "malformed" / "future_version": what exactly


def group_rewards(group: common_pb2.Group) -> np.ndarray:
    return np.array([s.reward for s in group.samples], dtype=np.float64)


ENV_FAILURE = re.compile(r"^episode \S+: environment ([A-Za-z_]+):")  # services/rollout/agent/failures.py
CODE = re.compile(r"^([A-Za-z][A-Za-z0-9_]{0,47}):")


def rollout_drop_reason(drop_reason: str) -> str:
    """A `Group.drop_reason` as a short code (a ledger reason and a metric label):
    "episode g/3: environment DEADLINE_EXCEEDED: ..." (the rollout's environment failures)
    → "env_deadline_exceeded"; "<word>: ..." → "<word>" in lower case; anything else →
    "rollout" (the whole text stays the ledger's detail)."""
    if match := ENV_FAILURE.match(drop_reason):
        return f"env_{match.group(1).lower()}"[:48]
    if match := CODE.match(drop_reason):
        return match.group(1).lower()
    return "rollout"


def check_group(
    group: common_pb2.Group,
    *,
    current_version: int,
    max_staleness: int,
    vocab_size: int | None = None,
    need_ref: bool = False,
) -> Verdict:
    """Rollout-dropped, stale, future-versioned, malformed and failed-score groups are
    dropped (and counted), never trained on; `detail` says what was wrong."""
    if group.drop_reason:
        return Verdict(False, rollout_drop_reason(group.drop_reason), group.drop_reason)
    if group.policy_version > current_version:
        return Verdict(
            False,
            "future_version",
            f"policy_version {group.policy_version} is newer than the learner's {current_version}: never published",
        )
    if current_version - group.policy_version > max_staleness:
        return Verdict(False, "stale")
    if not group.samples:
        return Verdict(False, "empty")
    if problem := malformed(group, vocab_size=vocab_size, need_ref=need_ref):
        return Verdict(False, "malformed", problem)
    if not all(math.isfinite(s.reward) for s in group.samples):
        return Verdict(False, "failed_reward", failed_score(group.samples))
    if group.HasField("greedy_sample") and not math.isfinite(group.greedy_sample.reward):
        return Verdict(False, "failed_reward", failed_score([group.greedy_sample]))  # ReMax's baseline
    return Verdict(True)


def failed_score(samples) -> str:
    """The first failed component's name, status and error, e.g. "sample 2: env ERROR: the
    episode carries no environment reward ..." ("" when no component says why)."""
    for sample in samples:
        for c in sample.reward_components:
            if c.status not in (common_pb2.SCORE_STATUS_OK, common_pb2.SCORE_STATUS_UNSPECIFIED) or c.error:
                status = common_pb2.ScoreStatus.Name(c.status).removeprefix("SCORE_STATUS_")
                return f"sample {sample.index}: {c.name} {status}: {c.error}"
    return ""


def has_signal(group: common_pb2.Group) -> bool:
    """DAPO's dynamic sampling keeps only groups whose rewards are not all equal."""
    rewards = group_rewards(group)
    return bool(rewards.size) and not np.all(rewards == rewards[0])


def groups_to_batch(
    groups: list[common_pb2.Group], *, pad_id: int, need_ref: bool, turn_credit: tuple[str, ...] = ()
) -> RolloutBatch:
    """One row per sample; `group_ids` numbers the groups 0..G-1 in the order given. `turn_credit`:
    the environment components whose turn rewards go to their turns (the batch's `turn_rewards`)."""
    prompts, responses, behaviour, ref, rewards, gids, versions, loss_masks = ([] for _ in range(8))
    for gi, group in enumerate(groups):
        prompt = unpack_int32(group.task.prompt_token_ids)
        for sample in group.samples:
            prompts.append(prompt)
            responses.append(unpack_int32(sample.response_token_ids))
            loss_masks.append(unpack_uint8(sample.loss_mask))
            behaviour.append(unpack_float32(sample.behaviour_logprobs))
            if need_ref:
                ref.append(unpack_float32(sample.ref_logprobs))
            rewards.append(sample.reward)
            gids.append(gi)
            versions.append(sample.policy_version or group.policy_version)
    batch = RolloutBatch.from_sequences(
        prompts,
        responses,
        rewards,
        gids,
        pad_id,
        behaviour_logprobs=behaviour,
        ref_logprobs=ref if need_ref else None,
        policy_versions=versions,
        loss_masks=loss_masks if any(m.size for m in loss_masks) else None,
    )
    return with_group_columns(batch, groups, turn_credit)


def with_group_columns(batch: RolloutBatch, groups: list[common_pb2.Group], turn_credit) -> RolloutBatch:
    """The batch with what comes per group rather than per sample: greedy rewards, turn
    rewards and the reward components' table (each None when the groups do not carry it)."""
    batch = dataclasses.replace(
        batch,
        greedy_rewards=greedy_reward_column(groups),
        turn_rewards=turn_reward_matrix(groups, turn_credit, batch.response_len),
    )
    table = reward_component_table(groups)
    if table is None:
        return batch
    return dataclasses.replace(batch, reward_components=table[0], reward_component_weights=table[1])


def greedy_reward_column(groups: list[common_pb2.Group]) -> torch.Tensor | None:
    """[B]: each row's group's greedy-sample reward (ReMax's baseline); None unless every
    group carries a greedy sample (tasks ask for one when the estimator needs it)."""
    if not groups or not all(g.HasField("greedy_sample") for g in groups):
        return None
    return torch.tensor([g.greedy_sample.reward for g in groups for _ in g.samples], dtype=torch.float32, device="cpu")


def reward_component_table(groups: list[common_pb2.Group]):
    """([B, K] component values, [B, K] weights), columns in name order, for multi-reward
    estimators (gdpo); None unless every sample carries the same named components."""
    rows = [{c.name: (c.value, c.weight) for c in s.reward_components} for g in groups for s in g.samples]
    names = sorted(rows[0]) if rows else []
    if not names or any(sorted(r) != names for r in rows):
        return None
    values = torch.tensor([[r[n][0] for n in names] for r in rows], dtype=torch.float32, device="cpu")
    weights = torch.tensor([[r[n][1] for n in names] for r in rows], dtype=torch.float32, device="cpu")
    return values, weights
