"""`meshrl data reasoning-gym --task NAME[,NAME...] [--weights W,...] [--config [NAME.]KEY=VALUE ...]
--n N --seed S --out FILE [--prompt direct] [--shots K] [--python PATH]`: reasoning-gym tasks as prompt rows.

Generation runs in the reasoning-gym venv (`bash scripts/adapter_venv.sh reasoning_gym`; another
interpreter with --python) through the library worker (meshrl/inputs/data/reasoning_gym); the rows carry what the
reward rule `reasoning_gym` needs to score with the task's own score_answer. Several tasks are
reasoning-gym's weighted composite. An unknown task (with the closest names), an unknown setting
(with the allowed keys) or a missing venv is one line and exit 2, before anything is written.

    meshrl data reasoning-gym --task leg_counting --config min_animals=1 --config max_animals=2 \\
        --shots 2 --n 1000 --seed 0 --out data/rg_legs_train.jsonl
    meshrl data reasoning-gym --task chain_sum,leg_counting --weights 3,1 \\
        --config chain_sum.max_terms=2 --n 1000 --seed 0 --out data/rg_mix.jsonl
"""

from __future__ import annotations

from pathlib import Path

from meshrl.errors import LaunchError
from meshrl.inputs.data.load import write_rows
from meshrl.inputs.data.reasoning_gym.rows import reasoning_gym_rows, task_specs
from meshrl.inputs.data.reasoning_gym.worker import checked_python

MAX_ROWS = 1_000_000  # built in memory before they are written


def add_parser(kinds) -> None:
    p = kinds.add_parser(
        "reasoning-gym", help="reasoning-gym tasks as prompt rows (scored by reward kind reasoning_gym)"
    )
    p.add_argument("--task", required=True, help="task name(s), comma-separated: several make a weighted composite")
    p.add_argument("--weights", help="one positive weight per task, comma-separated (default: equal)")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="[NAME.]KEY=VALUE",
        help="a task setting (difficulty), VALUE read as YAML; NAME. needed with several tasks; repeatable",
    )
    p.add_argument("--n", type=int, required=True, help="number of rows")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="output .jsonl")
    p.add_argument("--prompt", default="direct", help="reasoning-gym's system prompt by name (default direct)")
    p.add_argument(
        "--shots",
        type=int,
        default=0,
        help="worked examples (0-8) as turns before each question: <answer>...</answer> shown",
    )
    p.add_argument("--python", help="the reasoning-gym venv's python (default .venv-adapters/reasoning_gym/bin/python)")
    p.set_defaults(func=reasoning_gym)


def reasoning_gym(args) -> int:
    if not 1 <= args.n <= MAX_ROWS or args.seed < 0:
        raise LaunchError(f"--n {args.n} --seed {args.seed}: give 1..{MAX_ROWS:,} rows and a seed >= 0")
    try:
        specs = task_specs(args.task, args.weights, args.config)
        rows = reasoning_gym_rows(
            checked_python(args.python), specs, n=args.n, seed=args.seed, prompt=args.prompt, shots=args.shots
        )
    except ValueError as err:  # our options, or reasoning-gym refusing a name or setting
        raise LaunchError(str(err)) from None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_rows(args.out, rows)
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0
