"""groups_to_batch puts the reward's components in the batch (columns by name) for gdpo,
and the gdpo estimator trains on them."""

import torch
from torch.testing import assert_close

from meshrl.algos import get_advantage_estimator
from meshrl.api.common.v1 import common_pb2
from meshrl.services.learner.groups import groups_to_batch
from meshrl.transport.bus.codec import pack_float32, pack_int32


def sample(components: dict[str, tuple[float, float]]) -> common_pb2.Sample:
    s = common_pb2.Sample(
        response_token_ids=pack_int32([5]),
        behaviour_logprobs=pack_float32([-1.0]),
        reward=sum(v * w for v, w in components.values()),
    )
    for name, (value, weight) in components.items():
        s.reward_components.add(name=name, value=value, weight=weight)
    return s


def group(*samples) -> common_pb2.Group:
    g = common_pb2.Group(task=common_pb2.PromptTask(prompt_token_ids=pack_int32([1, 2])))
    g.samples.extend(samples)
    return g


def test_components_become_columns_in_name_order_with_their_weights():
    # "format" sorts before "math": columns (format, math), weights (0.5, 2)
    batch = groups_to_batch(
        [
            group(
                sample({"math": (1.0, 2.0), "format": (0.0, 0.5)}),
                sample({"format": (1.0, 0.5), "math": (0.0, 2.0)}),
                sample({"math": (0.0, 2.0), "format": (0.0, 0.5)}),
            )
        ],
        pad_id=0,
        need_ref=False,
    )
    assert_close(batch.reward_components, torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]]))
    assert_close(batch.reward_component_weights, torch.tensor([[0.5, 2.0]] * 3))
    result = get_advantage_estimator("gdpo")(
        rewards=batch.rewards,
        response_mask=batch.response_mask,
        group_ids=batch.group_ids,
        reward_components=batch.reward_components,
        reward_component_weights=batch.reward_component_weights,
    )
    # format (0, 1, 0) → (−1/√3, 2/√3, −1/√3); math (1, 0, 0) → (2/√3, −1/√3, −1/√3);
    # 0.5·format + 2·math = (3.5, −1, −2.5)/√3 → whitened over the three one-token rows
    raw = torch.tensor([3.5, -1.0, -2.5])
    expected = (raw - raw.mean()) / raw.std()
    assert_close(result.advantages[:, 0], expected, atol=1e-4, rtol=0)


def test_no_components_or_mismatched_names_leave_the_batch_without_them():
    plain = groups_to_batch([group(sample({}), sample({}))], pad_id=0, need_ref=False)
    assert plain.reward_components is None
    mixed = groups_to_batch([group(sample({"a": (1.0, 1.0)}), sample({"b": (1.0, 1.0)}))], pad_id=0, need_ref=False)
    assert mixed.reward_components is None
