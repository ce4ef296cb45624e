"""`meshrl train CONFIG.yaml [key=value ...] [--dry-run]`: validate, then run on this machine.
`meshrl train --resume RUN_DIR [key=value ...]`: continue a stopped or preempted run.

`--dry-run` prints the resolved config and the batch arithmetic and starts nothing.
Overrides are `a.b=c` (values parsed as YAML); they may come before or after flags.
`--resume` reads RUN_DIR/config.yaml (or CONFIG.yaml when given) and continues from the
newest good checkpoint in RUN_DIR/checkpoints; e.g. `learner.steps=40` extends a run.
A change that alters what is trained (model, algorithm) is refused, naming the keys.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from meshrl.cli import about
from meshrl.cli.plan import describe_plan
from meshrl.config.load import dump_config, load_config
from meshrl.config.lora import adapter_push_warning
from meshrl.errors import ConfigError
from meshrl.inputs.models.moe import moe_ratio_warning
from meshrl.launch.inputs import check_inputs, missing_inputs
from meshrl.launch.local import run_local
from meshrl.launch.model_settings import check_model_settings
from meshrl.run_layout import RunDir


def add_parser(sub) -> None:
    p = sub.add_parser(
        "train", help=about("train"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "config",
        type=Path,
        nargs="?",
        default=None,
        help="run config YAML (with --resume: default RUN_DIR/config.yaml)",
    )
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    p.add_argument(
        "--dry-run", action="store_true", help="print the resolved config and batch arithmetic, start nothing"
    )
    p.add_argument("--run-dir", type=Path, default=None, help="run directory (default: run.dir)")
    p.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its newest good checkpoint",
    )
    p.set_defaults(func=run, accepts_extra_overrides=True)


def dry_run(cfg) -> int:
    print(dump_config(cfg), end="")
    print("---")
    print(describe_plan(cfg))
    for problem in missing_inputs(cfg):
        print(f"warning: {problem}", file=sys.stderr)
    for warning in (moe_ratio_warning(cfg), adapter_push_warning(cfg)):
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
    return 0


def override_taken_for_config(args) -> None:
    """`meshrl train --resume RUN a.b=c`: argparse hands `a.b=c` to the optional CONFIG
    positional; it is an override when it names no file and has the `key=value` form."""
    if args.config is not None and "=" in args.config.name and not args.config.exists():
        args.overrides.insert(0, str(args.config))
        args.config = None


def config_path(args) -> Path:
    override_taken_for_config(args)
    if args.config is not None:
        return args.config
    if args.resume is None:
        raise ConfigError("meshrl train needs CONFIG.yaml (or --resume RUN_DIR)")
    saved = RunDir(args.resume).config
    if not saved.is_file():
        raise FileNotFoundError(
            f"--resume {args.resume}: no config.yaml there; is it a run dir? (or pass the run's CONFIG.yaml as well)"
        )
    return saved


def run(args) -> int:
    cfg = load_config(config_path(args), args.overrides)
    check_model_settings(cfg)  # LoRA targets and rank, tensor parallel, trackers: before anything starts
    if args.dry_run:
        return dry_run(cfg)
    check_inputs(cfg)
    run_dir = args.resume or args.run_dir or Path(cfg.run.dir)
    result = run_local(cfg, run_dir, resume=args.resume is not None)
    print(result.summary(), file=sys.stderr if result.failure else sys.stdout)
    return 1 if result.failure else 0  # README: a run that fails exits 1
