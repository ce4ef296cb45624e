"""`meshrl plot RUN_DIR [--out F]`: draw a run's training curves to a PNG.

Wire it into the CLI with `add_subcommand(subparsers)` (also exported as `add_parser`, the
name `meshrl.ops.cli.main` uses for its subcommand modules). A run dir that cannot be plotted is
reported as one line on stderr with exit status 2.
"""
from __future__ import annotations

import sys
from pathlib import Path


def cmd_plot(args) -> int:
    from meshrl.ops.plot.figure import plot_run  # lazy: matplotlib, only when plotting
    from meshrl.ops.plot.series import PlotError  # lazy: numpy at CLI start-up

    try:
        out = plot_run(args.run_dir, args.out)
    except PlotError as err:
        print(f"meshrl: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


def add_subcommand(subparsers) -> None:
    p = subparsers.add_parser("plot", help="draw a run's training curves (metrics.jsonl) to a PNG")
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a run directory")
    p.add_argument("--out", type=Path, default=None,
                   help="output PNG (default RUN_DIR/metrics.png)")
    p.set_defaults(func=cmd_plot)


add_parser = add_subcommand
