"""RolloutBatch / PreferenceBatch: padding layout, masks, positions, splitting, shape errors."""

import numpy as np
import pytest
import torch

from meshrl.algos.batch import PreferenceBatch, RolloutBatch
from meshrl.algos.checks import ShapeError


def small() -> RolloutBatch:
    return RolloutBatch.from_sequences(
        [np.array([5, 6]), np.array([7])],
        [np.array([8]), np.array([9, 10, 11])],
        rewards=[1.0, 0.0],
        group_ids=[3, 3],
        pad_id=0,
        behaviour_logprobs=[np.array([-0.5]), np.array([-1.0, -2.0, -3.0])],
        policy_versions=[4, 4],
    )


def test_layout_left_prompt_right_response():
    b = small()
    assert b.prompt_ids.tolist() == [[5, 6], [0, 7]]
    assert b.prompt_mask.tolist() == [[1, 1], [0, 1]]
    assert b.response_ids.tolist() == [[8, 0, 0], [9, 10, 11]]
    assert b.response_mask.tolist() == [[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    assert b.behaviour_logprobs.tolist() == [[-0.5, 0.0, 0.0], [-1.0, -2.0, -3.0]]
    assert b.input_ids().tolist() == [[5, 6, 8, 0, 0], [0, 7, 9, 10, 11]]
    assert b.attention_mask().tolist() == [[1, 1, 1, 0, 0], [0, 1, 1, 1, 1]]
    assert b.position_ids().tolist() == [[0, 1, 2, 2, 2], [0, 0, 1, 2, 3]]
    assert b.group_ids.dtype == torch.int64 and b.policy_versions.tolist() == [4, 4]
    assert b.response_lengths().tolist() == [1.0, 3.0]


def test_split_select_chunk():
    b = RolloutBatch.from_sequences(
        [np.array([1])] * 5, [np.array([2, 3])] * 5, rewards=np.arange(5.0), group_ids=np.arange(5), pad_id=0
    )
    assert [len(m) for m in b.split(2)] == [2, 2, 1]
    assert [m.rewards.tolist() for m in b.chunk(2)] == [[0.0, 1.0, 2.0], [3.0, 4.0]]
    picked = b.select(torch.tensor([4, 0]))
    assert picked.rewards.tolist() == [4.0, 0.0] and picked.group_ids.tolist() == [4, 0]
    with pytest.raises(ValueError, match="cannot cut 5 rows into 6"):
        b.chunk(6)


def test_shape_error_names_tensor_and_shapes():
    b = small()
    with pytest.raises(ShapeError, match=r"RolloutBatch\.response_mask has shape \(2, 2\)"):
        RolloutBatch(b.prompt_ids, b.prompt_mask, b.response_ids, b.response_mask[:, :2], b.rewards, b.group_ids)
    with pytest.raises(ShapeError, match="rewards"):
        RolloutBatch(b.prompt_ids, b.prompt_mask, b.response_ids, b.response_mask, torch.zeros(3), b.group_ids)
    with pytest.raises(ShapeError, match="must be equal"):
        RolloutBatch.from_sequences([np.array([1])], [], rewards=[1.0], group_ids=[0], pad_id=0)


def test_preference_batch_stacks_chosen_then_rejected():
    p = PreferenceBatch.from_sequences(
        [np.array([1, 2]), np.array([3])],
        chosen=[np.array([4]), np.array([5, 6])],
        rejected=[np.array([7, 8, 9]), np.array([10])],
        pad_id=0,
        ref_chosen_logps=[-1.0, -2.0],
        ref_rejected_logps=[-3.0, -4.0],
    )
    s = p.stacked()
    assert s.response_ids.tolist() == [[4, 0, 0], [5, 6, 0], [7, 8, 9], [10, 0, 0]]
    assert s.prompt_ids.tolist() == [[1, 2], [0, 3], [1, 2], [0, 3]]
    chosen, rejected = p.halves()
    assert chosen.response_mask.sum().item() == 3 and rejected.response_mask.sum().item() == 4
    assert p.select(slice(1, 2)).ref_rejected_logps.tolist() == [-4.0]
