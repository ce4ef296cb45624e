"""`math_verify`: 1.0 when the response's final answer is mathematically equal to the
ground truth, else 0.0, using Hugging Face's `math-verify` (parse → sympy → verify).

Answer extraction is math-verify's: `\\boxed{...}` first, then "final answer is ...",
"answer: ...", then the last LaTeX or plain expression in the text, so "7", "7.0",
"\\boxed{7}", "The answer is 7." and "\\frac{14}{2}" all equal a ground truth of "7". The
ground truth is parsed as LaTeX (wrapped in `$...$` unless it already has `$` or
`\\boxed`); a ground truth that does not parse is an ERROR, not a wrong answer.

Every item runs in a spawned worker process with math-verify's own (signal-based)
timeouts off and our per-item deadline on (see verify_pool): a hung item is TIMEOUT, a
crashed one ERROR. A response with no answer in it is a legitimate 0.0.
"""

from meshrl.config.reward_rules import MathVerifyParams
from meshrl.services.reward.registry import register_reward
from meshrl.services.reward.rules.verify_pool import shared_pool
from meshrl.services.reward.types import ItemScore, RewardItem, ok
from meshrl.services.reward.verify_worker import verify_answer


def to_score(result, params: MathVerifyParams) -> ItemScore:
    if isinstance(result, ItemScore):  # TIMEOUT / ERROR from the pool
        return result
    equal, extracted = result
    return ok(params.correct if equal else params.incorrect, extracted=float(extracted))


@register_reward("math_verify", params=MathVerifyParams)
def math_verify(items: list[RewardItem], params: MathVerifyParams) -> list[ItemScore]:
    args = [(it.response, it.ground_truth) for it in items]
    results = shared_pool(params.workers).run(verify_answer, args, params.timeout_s)
    return [to_score(r, params) for r in results]
