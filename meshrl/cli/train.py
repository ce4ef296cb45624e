"""`meshrl train CONFIG.yaml [key=value ...] [--dry-run]`: validate, then run on this machine.

`--dry-run` prints the resolved config and the batch arithmetic and starts nothing.
Overrides are `a.b=c` (values parsed as YAML); they may come before or after flags.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from meshrl.cli.plan import describe_plan
from meshrl.config.load import dump_config, load_config
from meshrl.launch.inputs import check_inputs, missing_inputs


def add_parser(sub) -> None:
    p = sub.add_parser("train", help="validate a run config and run it on this machine",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", type=Path, help="run config YAML")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    p.add_argument("--dry-run", action="store_true",
                   help="print the resolved config and batch arithmetic, start nothing")
    p.add_argument("--run-dir", type=Path, default=None, help="run directory (default: run.dir)")
    p.set_defaults(func=run, accepts_extra_overrides=True)


def dry_run(cfg) -> int:
    print(dump_config(cfg), end="")
    print("---")
    print(describe_plan(cfg))
    for problem in missing_inputs(cfg):
        print(f"warning: {problem}", file=sys.stderr)
    return 0


def run(args) -> int:
    cfg = load_config(args.config, args.overrides)
    if args.dry_run:
        return dry_run(cfg)
    check_inputs(cfg)
    from meshrl.launch.local import run_local  # heavy imports only when a run starts

    result = run_local(cfg, args.run_dir or Path(cfg.run.dir))
    print(result.summary())
    return 0
