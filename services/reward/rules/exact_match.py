"""`exact_match`: 1.0 when the normalized response equals the ground truth, else 0.0.

Normalization: optional strip of surrounding whitespace, optional case folding, and runs
of inner whitespace collapsed to one space.
"""

import re

from meshrl.config.reward_rules import ExactMatchParams
from meshrl.services.reward.registry import register_reward
from meshrl.services.reward.types import RewardItem


def normalize(text: str, params: ExactMatchParams) -> str:
    text = re.sub(r"\s+", " ", text)
    if params.strip:
        text = text.strip()
    return text if params.case_sensitive else text.casefold()


@register_reward("exact_match", params=ExactMatchParams)
def exact_match(items: list[RewardItem], params: ExactMatchParams) -> list[float]:
    return [
        params.match if normalize(it.response, params) == normalize(it.ground_truth, params) else params.no_match
        for it in items
    ]
