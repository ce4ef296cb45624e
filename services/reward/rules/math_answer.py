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
from pydantic import Field

from meshrl.services.reward.registry import RuleParams, register_reward
from meshrl.services.reward.rules.verify_pool import shared_pool
from meshrl.services.reward.types import ItemScore, RewardItem, ok


class MathVerifyParams(RuleParams):
    timeout_s: float = Field(5.0, gt=0.0)  # per item, our own deadline
    workers: int = Field(2, ge=1)  # verifier processes (shared by all math_verify components)
    correct: float = 1.0
    incorrect: float = 0.0


def parse_gold(ground_truth: str) -> list:
    from math_verify import parse

    text = ground_truth.strip()
    gold = [] if ("$" in text or "\\boxed" in text) else parse(f"${text}$", parsing_timeout=None)
    gold = gold or parse(text, parsing_timeout=None)
    if not gold:
        raise ValueError(f"ground truth {ground_truth!r} could not be parsed as math; fix the dataset row")
    return gold


def verify_answer(response: str, ground_truth: str, correct: float, incorrect: float) -> ItemScore:
    """Runs inside a worker process. Raises ValueError for an unparseable ground truth."""
    from math_verify import parse, verify

    gold = parse_gold(ground_truth)
    answer = parse(response, parsing_timeout=None)
    if not answer:
        return ok(incorrect, extracted=0.0)
    equal = verify(gold, answer, timeout_seconds=None)
    return ok(correct if equal else incorrect, extracted=1.0)


@register_reward("math_verify", params=MathVerifyParams)
def math_verify(items: list[RewardItem], params: MathVerifyParams) -> list[ItemScore]:
    args = [(it.response, it.ground_truth, params.correct, params.incorrect) for it in items]
    return shared_pool(params.workers).run(verify_answer, args, params.timeout_s)
