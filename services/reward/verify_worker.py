"""What runs inside a verifier worker process. Imports nothing from meshrl on purpose: a
spawned worker (and every restart after a timeout) pays only for math_verify's import.
"""


def warm_up(module: str) -> bool:
    """Import the heavy module once so items don't pay for it under their deadline."""
    __import__(module)
    return True


def parse_gold(ground_truth: str) -> list:
    from math_verify import parse  # lazy: only in the verifier worker process, which imports nothing else

    text = ground_truth.strip()
    gold = [] if ("$" in text or "\\boxed" in text) else parse(f"${text}$", parsing_timeout=None)
    gold = gold or parse(text, parsing_timeout=None)
    if not gold:
        raise ValueError(f"ground truth {ground_truth!r} could not be parsed as math; fix the dataset row")
    return gold


def verify_answer(response: str, ground_truth: str) -> tuple[bool, bool]:
    """(equal, an answer was extracted). Raises ValueError for an unparseable ground truth.

    math-verify's own signal-based timeouts are off (`parsing_timeout=None`,
    `timeout_seconds=None`): the pool's deadline is the timeout.
    """
    from math_verify import parse, verify  # lazy: only in the verifier worker process, which imports nothing else

    gold = parse_gold(ground_truth)
    answer = parse(response, parsing_timeout=None)
    if not answer:
        return False, False
    return bool(verify(gold, answer, timeout_seconds=None)), True
