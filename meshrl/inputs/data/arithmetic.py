"""Arithmetic prompts with known answers: a task where reward can visibly rise.

`arithmetic_rows(n, digits=1, ops="+", seed=0)` makes verl rows
    {"prompt": [{"role": "user", "content": "What is 3+4? Answer with a number."}],
     "reward_model": {"style": "rule", "ground_truth": "7"}, "data_source": "arithmetic",
     "extra_info": {"index": 0, "a": 3, "b": 4, "op": "+"}}
`preference_pairs(...)` makes DPO rows over the same prompts: chosen = the right answer,
rejected = a wrong one (the answer moved by ±1..±3, never below zero).

Operands have exactly `digits` digits (0..9 for one digit). For "-" the larger operand comes
first so answers are never negative. Operands are drawn with numpy in one call per array.

Run:
    python -m meshrl.inputs.data.arithmetic --out data/sums.jsonl --n 256 --digits 1 --seed 0
    python -m meshrl.inputs.data.arithmetic --out data/pairs.jsonl --n 256 --dpo
    python -m meshrl.inputs.data.arithmetic --out data/tool.jsonl --n 256 --digits 3 --ops "*" --tool [--tool-shots 1]
"""

from __future__ import annotations

import argparse

import numpy as np

from meshrl.inputs.data.load import write_rows

OPS = {"+": np.add, "-": np.subtract, "*": np.multiply}
TEMPLATE = "What is {a}{op}{b}? Answer with a number."
# The tool task (services/environment/builtins/tool_arith.py): the calculator is offered as a tool.
TOOL_TEMPLATE = "What is {a}{op}{b}? You may use the calculator tool. Answer with a number."
# Worked examples a tool row may start with (`tool_shots`): a small model rarely writes a
# Hermes tool call from the tools block alone, but copies one it has seen in the conversation
# (measured: benchmarks/agent_tool_prompts.py, docs/benchmarks.md). Fixed operands: the same
# shots in every row, so the prompts share their long prefix.
TOOL_RULE = "You are a helpful assistant. Use the calculator tool for arithmetic, then give the final number."
TOOL_SHOTS = [(123, 45), (678, 91)]


def tool_shot(a: int, b: int) -> list[dict]:
    """One worked example as conversation turns: the question, the call, the tool's answer, the answer."""
    call = '<tool_call>{"name": "calculator", "arguments": {"expression": "%d*%d"}}</tool_call>' % (a, b)
    return [
        {"role": "user", "content": TOOL_TEMPLATE.format(a=a, op="*", b=b)},
        {"role": "assistant", "content": call},
        {"role": "tool", "content": str(a * b)},
        {"role": "assistant", "content": str(a * b)},
    ]


def with_tool_shots(rows: list[dict], shots: int) -> list[dict]:
    """`rows` whose prompts start with the rule and the first `shots` worked examples."""
    if not 0 <= shots <= len(TOOL_SHOTS):
        raise ValueError(f"tool_shots={shots}: use 0..{len(TOOL_SHOTS)}")
    if shots == 0:
        return rows
    head = [{"role": "system", "content": TOOL_RULE}] + [m for a, b in TOOL_SHOTS[:shots] for m in tool_shot(a, b)]
    return [{**row, "prompt": head + row["prompt"]} for row in rows]


def operands(n: int, digits: int, ops: str, rng: np.random.Generator):
    """Arrays (a, b, op index, answer) for `n` problems."""
    if digits < 1 or any(op not in OPS for op in ops) or not ops:
        raise ValueError(f"digits={digits}, ops={ops!r}: need digits ≥ 1 and ops from {list(OPS)}")
    low = 0 if digits == 1 else 10 ** (digits - 1)
    a, b = rng.integers(low, 10**digits, size=(2, n))
    op = rng.integers(0, len(ops), size=n)
    minus = np.array([ops[i] == "-" for i in range(len(ops))])[op]
    a, b = np.where(minus, np.maximum(a, b), a), np.where(minus, np.minimum(a, b), b)
    answers = np.zeros(n, dtype=np.int64)
    for i, symbol in enumerate(ops):  # one vectorized pass per operator, not per problem
        answers = np.where(op == i, OPS[symbol](a, b), answers)
    return a, b, op, answers


def arithmetic_rows(
    n: int, *, digits: int = 1, ops: str = "+", seed: int = 0, data_source: str = "arithmetic", template: str = TEMPLATE
) -> list[dict]:
    """`n` verl-style rows asking for a op b, ground truth the answer as a string."""
    a, b, op, answers = operands(n, digits, ops, np.random.default_rng(seed))
    return [
        {
            "prompt": [{"role": "user", "content": template.format(a=x, op=ops[o], b=y)}],
            "reward_model": {"style": "rule", "ground_truth": str(ans)},
            "data_source": data_source,
            "extra_info": {"index": i, "a": int(x), "b": int(y), "op": ops[o]},
        }
        for i, (x, y, o, ans) in enumerate(zip(a, b, op, answers))
    ]


def wrong_answers(answers: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each answer moved by a nonzero offset in ±1..±3, reflected upward if it went below 0."""
    offset = rng.integers(1, 4, size=answers.shape) * rng.choice([-1, 1], size=answers.shape)
    wrong = answers + offset
    return np.where(wrong < 0, answers + np.abs(offset), wrong)


def preference_pairs(n: int, *, digits: int = 1, ops: str = "+", seed: int = 0) -> list[dict]:
    """`n` DPO rows: conversational prompt, chosen = right answer, rejected = a wrong one."""
    rng = np.random.default_rng(seed)
    a, b, op, answers = operands(n, digits, ops, rng)
    wrong = wrong_answers(answers, rng)
    return [
        {
            "prompt": [{"role": "user", "content": TEMPLATE.format(a=x, op=ops[o], b=y)}],
            "chosen": [{"role": "assistant", "content": str(good)}],
            "rejected": [{"role": "assistant", "content": str(bad)}],
        }
        for x, y, o, good, bad in zip(a, b, op, answers, wrong)
    ]


def write_problems(
    out, *, n: int, digits: int = 1, ops: str = "+", seed: int = 0, tool: bool = False, tool_shots: int = 0
) -> int:
    """Write `arithmetic_rows(...)` to `out` (.jsonl or .parquet); the number of rows. `tool`:
    the tool task's rows (TOOL_TEMPLATE, data_source "tool_arith"), `tool_shots` worked examples first."""
    rows = arithmetic_rows(
        n,
        digits=digits,
        ops=ops,
        seed=seed,
        **({"template": TOOL_TEMPLATE, "data_source": "tool_arith"} if tool else {}),
    )
    if tool_shots and not tool:
        raise ValueError("tool_shots needs tool=True (--tool): worked examples of the calculator tool")
    rows = with_tool_shots(rows, tool_shots)
    write_rows(out, rows)
    return len(rows)


def write_pairs(out, *, n: int, digits: int = 1, ops: str = "+", seed: int = 0) -> int:
    """Write `preference_pairs(...)` to `out` (.jsonl or .parquet); the number of rows."""
    rows = preference_pairs(n, digits=digits, ops=ops, seed=seed)
    write_rows(out, rows)
    return len(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write arithmetic prompts (or DPO pairs).")
    parser.add_argument("--out", required=True, help="output .jsonl or .parquet")
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--digits", type=int, default=1)
    parser.add_argument("--ops", default="+", help='operators to mix, e.g. "+-*"')
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dpo", action="store_true", help="write prompt/chosen/rejected pairs")
    parser.add_argument("--tool", action="store_true", help="the tool task's prompts (calculator offered)")
    parser.add_argument("--tool-shots", type=int, default=0, help="worked tool-call examples before each question")
    args = parser.parse_args(argv)
    if args.dpo:
        n = write_pairs(args.out, n=args.n, digits=args.digits, ops=args.ops, seed=args.seed)
    else:
        n = write_problems(
            args.out,
            n=args.n,
            digits=args.digits,
            ops=args.ops,
            seed=args.seed,
            tool=args.tool,
            tool_shots=args.tool_shots,
        )
    print(f"wrote {n} rows to {args.out}")


if __name__ == "__main__":
    main()
