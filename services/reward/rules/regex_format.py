"""`regex`: a format reward. `match` when `pattern` is found in the response, else `no_match`.

`fullmatch: true` requires the whole (stripped) response to match; `flags` are any of
"i" (ignore case), "s" (dot matches newline), "m" (multiline). Example, R1-style format:
`pattern: "^<think>.*</think>\\s*<answer>.*</answer>$"`, `flags: "s"`, `fullmatch: true`.
"""

from meshrl.config.reward_rules import RegexParams
from meshrl.services.reward.registry import register_reward
from meshrl.services.reward.types import RewardItem


@register_reward("regex", params=RegexParams)
def regex_format(items: list[RewardItem], params: RegexParams) -> list[float]:
    pattern = params.compiled()
    if params.fullmatch:
        hits = [pattern.fullmatch(it.response.strip()) for it in items]
    else:
        hits = [pattern.search(it.response) for it in items]
    return [params.match if hit else params.no_match for hit in hits]
