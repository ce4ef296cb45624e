"""`meshrl data arithmetic|pairs --out FILE --n N [--digits D] [--ops +-*] [--seed S] [--tool]`: make a data set.

Thin wrappers over `meshrl.inputs.data.arithmetic`: `arithmetic` writes verl-style prompt rows for
RL (`prompt`, `reward_model.ground_truth`, `data_source`), `pairs` writes DPO rows
(`prompt`, `chosen`, `rejected`). `arithmetic --tool` writes the tool task's rows (the
calculator offered, data_source tool_arith: services/environment/builtins/tool_arith.py), e.g.
`meshrl data arithmetic --tool --digits 3 --ops "*" --n 256 --out data/tool_train.jsonl`.
"""

from __future__ import annotations

from pathlib import Path

from meshrl.cli import about, data_reasoning_gym, data_verifiers
from meshrl.errors import LaunchError
from meshrl.inputs.data import arithmetic as gen


def _common(p) -> None:
    p.add_argument("--out", type=Path, required=True, help="output .jsonl (or .parquet)")
    p.add_argument("--n", type=int, required=True, help="number of rows")
    p.add_argument("--digits", type=int, default=1, help="digits per operand (default 1)")
    p.add_argument("--ops", default="+", help='operators to mix, e.g. "+-*" (default +)')
    p.add_argument("--seed", type=int, default=0)


def add_parser(sub) -> None:
    p = sub.add_parser("data", help=about("data"))
    kinds = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    arith = kinds.add_parser("arithmetic", help="sum problems as verl-style RL prompt rows")
    _common(arith)
    arith.add_argument("--tool", action="store_true", help="the tool task's prompts (environment tool_arith)")
    arith.add_argument(
        "--tool-shots",
        type=int,
        default=0,
        help="with --tool: worked tool-call examples (0-2) as turns before each question",
    )
    arith.set_defaults(func=arithmetic)
    pairs = kinds.add_parser("pairs", help="sum problems as DPO pairs (chosen right, rejected wrong)")
    _common(pairs)
    pairs.set_defaults(func=pairs_)
    data_reasoning_gym.add_parser(kinds)  # meshrl data reasoning-gym (its own module)
    data_verifiers.add_parser(kinds)  # meshrl data verifiers (its own module)


# The rows are built in memory before they are written (a million is a few hundred MB), and
# operands and products must fit in int64 (9 digits times 9 digits is under 2**63).
MAX_ROWS = 1_000_000
MAX_DIGITS = 9


def _check(args) -> None:
    if not 1 <= args.n <= MAX_ROWS:
        raise LaunchError(f"--n {args.n}: give 1..{MAX_ROWS:,} rows (more: run it again with another --seed)")
    if not 1 <= args.digits <= MAX_DIGITS:
        raise LaunchError(f"--digits {args.digits}: give 1..{MAX_DIGITS} digits per operand")
    if args.seed < 0:
        raise LaunchError(f"--seed {args.seed}: give a seed >= 0")
    args.out.parent.mkdir(parents=True, exist_ok=True)


def _write(args, kind: str) -> int:
    _check(args)
    if getattr(args, "tool_shots", 0) and not args.tool:
        raise LaunchError("--tool-shots needs --tool: the worked examples are calculator tool calls")
    write = gen.write_pairs if kind == "pairs" else gen.write_problems
    extra = {"tool": True, "tool_shots": args.tool_shots} if getattr(args, "tool", False) else {}
    try:
        n = write(args.out, n=args.n, digits=args.digits, ops=args.ops, seed=args.seed, **extra)
    except ValueError as err:  # bad --ops / --digits: the generator says what is allowed
        raise LaunchError(str(err)) from None
    print(f"wrote {n} rows to {args.out}")
    return 0


def arithmetic(args) -> int:
    return _write(args, "arithmetic")


def pairs_(args) -> int:
    return _write(args, "pairs")
