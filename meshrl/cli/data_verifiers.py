"""`meshrl data verifiers --module NAME [--args JSON] [--split train|eval] [--n N] [--seed S]
[--python PATH] --out FILE`: a verifiers environment's dataset as meshrl prompt rows.

The rows are the environment's own (load_environment(**args) in its venv, through the same
handlers the adapter serves: services/environment/adapters/verifiers): its prompt messages
(system prompt and few-shot included), its `answer` as the ground truth, and
`extra_info.verifiers.row`, the row index the adapter's Reset plays. `--seed` shuffles the
order, `--n` keeps the first N. A missing venv, a module that is not installed there or a
load_environment that raises is one line and exit 2, before anything is written.

    meshrl data verifiers --module my_env --args '{"difficulty": "easy"}' --out data/my_env.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path

from meshrl.errors import LaunchError
from meshrl.inputs.data.load import write_rows
from meshrl.services.environment.adapters.verifiers.paths import HANDLERS, default_python
from meshrl.transport.library import WorkerDied, WorkerError, WorkerStartError, WorkerTimeout, run_once


def add_parser(kinds) -> None:
    p = kinds.add_parser("verifiers", help="a verifiers environment's dataset as prompt rows (environment.verifiers)")
    p.add_argument("--module", required=True, help="the environment's module (its load_environment is called)")
    p.add_argument("--args", default="{}", help="load_environment's keyword arguments, a JSON object")
    p.add_argument("--split", choices=["train", "eval"], default="train")
    p.add_argument("--n", type=int, default=-1, help="rows to write (default: all)")
    p.add_argument("--seed", type=int, default=None, help="shuffle the rows with this seed (default: in order)")
    p.add_argument(
        "--python", default=None, help="the verifiers venv's python, with the package (default: the adapter venv)"
    )
    p.add_argument("--timeout", type=float, default=600.0, help="seconds for loading and writing (default 600)")
    p.add_argument("--out", type=Path, required=True, help="output .jsonl (or .parquet)")
    p.set_defaults(func=verifiers)


def load_args(text: str) -> dict:
    try:
        args = json.loads(text)
    except ValueError as err:
        raise LaunchError(f"--args {text!r}: not JSON ({err}); give a JSON object") from None
    if not isinstance(args, dict):
        raise LaunchError(f"--args {text!r}: give a JSON object of load_environment's keyword arguments")
    return args


def verifiers(args) -> int:
    init = {"module": args.module, "args": load_args(args.args)}
    params = {"split": args.split, "n": args.n, "seed": args.seed}
    try:
        rows = run_once(
            args.python or default_python(),
            HANDLERS,
            "rows",
            params,
            name="verifiers",
            init_params=init,
            timeout_s=args.timeout,
        )
    except (WorkerStartError, WorkerError, WorkerTimeout, WorkerDied) as err:
        raise LaunchError(f"meshrl data verifiers --module {args.module}: {err}") from None
    if not rows:
        raise LaunchError(f"{args.module}: its {args.split} split has no rows (load_environment gave none)")
    write_rows(args.out, rows)
    print(f"wrote {len(rows)} rows to {args.out}")
    return 0
