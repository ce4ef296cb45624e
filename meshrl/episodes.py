"""What a `Sample` says about its episode, read the same way by every service.

A multi-turn sample (an agent's episode) holds the model's turns and the
environment's observations in one response; `Sample.turns` and `Sample.loss_mask` say which
is which. A single-turn sample has neither, and each function below then answers for the
one response it is. The reward service scores with these; the learner counts with them.

- `model_token_count`: the tokens the model wrote (the response less the observations);
- `final_text`: the model's last turn (what rule rewards such as math_verify check);
- `rendered_episode`: the whole episode as the model saw it (what external reward services
  get): each turn's text and the observation's rendered delta after it;
- `episode_messages`: the episode after the prompt as (role, content) pairs, each model turn
  "assistant" and each observation "tool".
"""

from __future__ import annotations

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus.codec import unpack_uint8

INT32_BYTES = 4


def model_token_count(sample: common_pb2.Sample) -> int:
    """The tokens the model wrote: the response less an episode's observation tokens."""
    mask = unpack_uint8(sample.loss_mask)
    return int(mask.sum()) if mask.size else len(sample.response_token_ids) // INT32_BYTES


def final_text(sample: common_pb2.Sample) -> str:
    """The model's last turn as text; the response for a single-turn sample."""
    return sample.turns[-1].text if sample.turns else sample.response_text


def rendered_episode(sample: common_pb2.Sample) -> str:
    """The episode as the model saw it: each turn's text, then the observation the chat
    template appended after it (its delta, role markup included); a single-turn sample's
    response."""
    if not sample.turns:
        return sample.response_text
    return "".join(turn.text + turn.observation_text for turn in sample.turns)


def episode_messages(sample: common_pb2.Sample) -> tuple[tuple[str, str], ...]:
    """(role, content) after the prompt: "assistant" per turn, "tool" per observation."""
    messages: list[tuple[str, str]] = []
    for turn in sample.turns:
        messages.append(("assistant", turn.text))
        if turn.observation_text:
            messages.append(("tool", turn.observation_text))
    return tuple(messages)
