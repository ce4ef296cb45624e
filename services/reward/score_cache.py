"""A bounded LRU cache of external scores keyed by (prompt, response, ground truth).

Only OK scores are kept (a failure is worth asking again). The key is the whole text, not a
hash, so two items never collide; the size bound is in entries. GRPO groups repeat a prompt
with different responses, so hits come from identical responses (short answers, re-scored
redeliveries, evaluation repeats).
"""

from __future__ import annotations

from collections import OrderedDict

from meshrl.services.reward.types import ItemScore, RewardItem


def cache_key(item: RewardItem) -> tuple[str, str, str]:
    return (item.prompt, item.response, item.ground_truth)


class ScoreCache:
    def __init__(self, max_entries: int):
        if max_entries < 1:
            raise ValueError(f"ScoreCache needs max_entries >= 1, got {max_entries} (0 means: no cache)")
        self.max_entries = max_entries
        self.entries: OrderedDict[tuple[str, str, str], ItemScore] = OrderedDict()
        self.hits = self.misses = 0

    def get(self, item: RewardItem) -> ItemScore | None:
        score = self.entries.get(key := cache_key(item))
        if score is None:
            self.misses += 1
            return None
        self.entries.move_to_end(key)
        self.hits += 1
        return score

    def put(self, item: RewardItem, score: ItemScore) -> None:
        if not score.ok:
            return
        self.entries[key := cache_key(item)] = score
        self.entries.move_to_end(key)
        while len(self.entries) > self.max_entries:
            self.entries.popitem(last=False)
