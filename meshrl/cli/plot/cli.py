"""`meshrl plot RUN_DIR_OR_URL [--out F]`: draw a run's training curves to a PNG.

With a gateway run URL (http://HOST:PORT/runs/NAME, a viewer token in $MESHRL_GATEWAY_TOKEN)
the rows come from the gateway's StreamMetrics (every row so far; meshrl/run/remote.py) and the
PNG is written to --out (default NAME-metrics.png here): the same panels as from the run dir.

Wire it into the CLI with `add_subcommand(subparsers)` (also exported as `add_parser`, the
name `meshrl.cli.main` uses for its subcommand modules). A run dir that cannot be plotted is
reported as one line on stderr with exit status 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from meshrl.cli import about
from meshrl.cli.plot.figure import plot_run, plot_series
from meshrl.cli.plot.series import PlotError, series_from_rows
from meshrl.run.remote import is_url, metric_rows, run_name


def plot_url(url: str, out_png: Path | None) -> Path:
    """The run's metrics rows from the gateway at `url`, drawn as `meshrl plot RUN_DIR` draws them."""
    name = run_name(url)
    steps, series = series_from_rows(metric_rows(url), f"the metrics of {url}")
    return plot_series(steps, series, name, out_png or Path(f"{name}-metrics.png"), f"the metrics of {url}")


def cmd_plot(args) -> int:
    try:
        out = plot_url(args.run_dir, args.out) if is_url(args.run_dir) else plot_run(Path(args.run_dir), args.out)
    except PlotError as err:
        print(f"meshrl: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


def add_subcommand(subparsers) -> None:
    p = subparsers.add_parser("plot", help=about("plot"))
    p.add_argument(
        "run_dir",
        metavar="RUN_DIR_OR_URL",
        help="a run directory, or a gateway run URL http://HOST:PORT/runs/NAME (viewer token in $MESHRL_GATEWAY_TOKEN)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output PNG (default RUN_DIR/metrics.png; with a URL, NAME-metrics.png here)",
    )
    p.set_defaults(func=cmd_plot)


add_parser = add_subcommand
