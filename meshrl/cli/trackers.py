"""`meshrl trackers flush RUN_DIR`: send the MLflow rows a run could not send, and end its MLflow run.

A tracking server that was down when the learner stopped leaves the rows it did not take in
RUN_DIR/trackers/mlflow-unsent.jsonl (the run's end included), and the MLflow run RUNNING with
part of its steps. Once the server is back this sends them in order to the same MLflow run,
which the end then marks FINISHED (KILLED when the run stopped before its final model). The
next start of the same run sends them too. A server still down: one line, exit 2, the rows
kept for the next try. Then every step of RUN_DIR/metrics.jsonl the MLflow run still lacks is
sent (a learner killed outright wrote no unsent rows; metrics.jsonl has every step), and
`--end killed|finished|failed` ends an MLflow run such a learner left RUNNING.

    meshrl trackers flush runs/grpo --end killed

    meshrl trackers flush runs/grpo
"""

from __future__ import annotations

import argparse
from pathlib import Path

from meshrl.cli import about
from meshrl.errors import LaunchError
from meshrl.services.learner.trackers import mlflow_unsent
from meshrl.services.learner.trackers.mlflow_backfill import backfill


def add_parser(sub) -> None:
    p = sub.add_parser(
        "trackers", help=about("trackers"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    flush = actions.add_parser("flush", help="send RUN_DIR's unsent MLflow rows and end its MLflow run")
    flush.add_argument("run_dir", type=Path, help="the run dir (holds trackers/mlflow-unsent.jsonl)")
    flush.add_argument(
        "--end",
        choices=["finished", "killed", "failed"],
        help="then mark the MLflow run ended so (a learner killed outright left it RUNNING)",
    )
    flush.set_defaults(func=run_flush)


def run_flush(args) -> int:
    if not args.run_dir.is_dir():
        raise LaunchError(f"{args.run_dir} is no run dir: name the run.dir of the run to flush")
    sent = mlflow_unsent.flush(args.run_dir)
    found = mlflow_unsent.client_for(args.run_dir)
    if found is None:
        print(f"{args.run_dir}: no MLflow run (telemetry.trackers had no mlflow): nothing to send")
        return 0
    client, uri, mlflow_run_id = found
    try:
        filled = backfill(args.run_dir, client, mlflow_run_id)
        if args.end:
            client.set_terminated(mlflow_run_id, args.end.upper())
            mlflow_unsent.mark_ended(args.run_dir, args.end.upper())
    except Exception as err:  # MLflow raises its own and requests' errors: all mean "not taken"
        raise LaunchError(
            f"MLflow at {uri} did not answer ({type(err).__name__}: {str(err)[:200]}): start the server and "
            f"run `meshrl trackers flush {args.run_dir}` again"
        ) from None
    print(
        f"{args.run_dir}: sent {sent} waiting rows and {filled} steps only metrics.jsonl had to MLflow run {mlflow_run_id}"
    )
    return 0
