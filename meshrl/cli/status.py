"""`meshrl status RUN_DIR [--json]`: the state of a running local run, at a glance.

Prints the learner's status (state, step / total, policy version, groups, message, from
LearnerControlService.GetStatus) and a table of the replicas announced in the run KV
(service, replica id, gRPC address; for rollout the weights version it holds, whether it
is ready and how many groups it generated), then the replica counts the launcher keeps
(what `meshrl scale` last asked) and the dead letters by stage with their reasons (a message
that failed `max_deliver` times or could not be parsed: it is not lost, it is there to read)
and how often each service was restarted (`restarts: reward-0 ×1`, from RUN_DIR/restarts.jsonl). `--json` prints the same as one JSON object.

A live run is asked through its launcher (RUN_DIR/launcher.json names its NATS and run id).
A run no launcher is running (finished, stopped, failed) is summed up from its run dir
(meshrl.run.summary): steps trained of the total, the last step's reward, the held-out
accuracy before and after, the last policy version, where the weights are (final/, the
checkpoints), the ledger's dropped groups by reason and how it ended; `--json` prints that.
`meshrl status http://HOST:PORT/runs/NAME` asks a gateway instead (meshrl.run.remote).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from pathlib import Path

from meshrl.cli import about
from meshrl.errors import LaunchError
from meshrl.launch.failed_start import failed_start_dir
from meshrl.run.presence import find_launcher
from meshrl.run.remote import is_url, print_status
from meshrl.run.secrets import admin_credentials, grpc_user_env, secrets_dir, user_tls_env
from meshrl.run.status import gather_status, restart_counts, restarts_line
from meshrl.run.summary import run_summary
from meshrl.run_layout import RunDir
from meshrl.transport.bus.credentials import credentials_path
from meshrl.transport.bus.errors import BusUnavailable

COLUMNS = (
    ("service", "SERVICE"),
    ("replica", "REPLICA"),
    ("grpc", "GRPC"),
    ("weights_version", "WEIGHTS"),
    ("ready", "READY"),
    ("groups_generated", "GROUPS"),
    ("workers", "WORKERS"),
    ("cores", "CORES"),
)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "status", help=about("status"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "run_dir",
        metavar="RUN_DIR_OR_URL",
        help="the run dir of a running `meshrl train`, or a gateway run URL http://HOST:PORT/runs/NAME "
        "(token in $MESHRL_GATEWAY_TOKEN)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--timeout", type=float, default=3.0, help="seconds per call (NATS, gRPC)")
    p.set_defaults(func=run)


def learner_line(learner: dict) -> str:
    if "error" in learner:
        return f"learner  {learner['grpc']}: {learner['error']}"
    line = (
        f"learner  {learner['state']}  step {learner['step']}/{learner['total_steps']}  "
        f"policy v{learner['policy_version']}  groups trained {learner['groups_trained']}, "
        f"in flight {learner['groups_in_flight']}"
    )
    return line + (f"  ({learner['message']})" if learner["message"] else "")


def cell(row: dict, key: str) -> str:
    value = row.get(key)
    if key == "weights_version" and value is not None:
        return f"v{value}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def replica_table(rows: list[dict]) -> str:
    table = [[title for _, title in COLUMNS]] + [[cell(r, key) for key, _ in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(text.ljust(w) for text, w in zip(line, widths)).rstrip() for line in table]
    lines += [f"  {r['replica']}: {r['error']}" for r in rows if "error" in r]
    return "\n".join(lines)


def dead_letter_lines(dead: dict) -> list[str]:
    if not dead["total"]:
        return ["dead letters: none"]
    lines = [f"dead letters: {dead['total']} (" + ", ".join(f"{s} {n}" for s, n in dead["by_stage"].items()) + ")"]
    return lines + [f"  {r['count']:>4} × {r['stage']}: {r['example'][:160]}" for r in dead["reasons"]]


def describe(status: dict) -> str:
    wanted = ", ".join(f"{k} ×{v}" for k, v in status["wanted"].items())
    return "\n".join(
        [
            f"run {status['run_id']}  (launcher pid {status['launcher_pid']}, nats {status['nats']})",
            learner_line(status["learner"]),
            "",
            replica_table(status["replicas"]),
            "",
            f"kept by the launcher: {wanted or 'nothing scalable'}",
            restarts_line(status.get("restarts", {})),
            *dead_letter_lines(status["dead_letters"]),
        ]
    )


def number(value, digits: int = 3) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{value:.{digits}f}"


def accuracy_line(held_out: dict) -> str:
    before, after = held_out["before"].get("eval/accuracy"), held_out["after"].get("eval/accuracy")
    if before is None and after is None:
        return "held-out accuracy: not evaluated (set eval.every and data.eval)"
    n = held_out["after"].get("eval/n", held_out["before"].get("eval/n"))
    where = f"after step {held_out['after_step']}" if after is not None else "no evaluation after training"
    return f"held-out accuracy: {number(before)} at start -> {number(after)} {where}" + (
        f" ({n:.0f} prompts)" if n else ""
    )


def weights_lines(summary: dict) -> list[str]:
    saved = summary["checkpoints"]
    return [
        f"final model: {summary['final_model'] or 'none (final/ is written when the last step is trained)'}",
        f"checkpoints: {len(saved)}" + (f", newest {saved[-1]}" if saved else ""),
    ]


def mlflow_line(mlflow: dict | None) -> list[str]:
    """Where the run's MLflow run stands, and the one command to finish it when a learner could not."""
    if mlflow is None:
        return []
    unsent = f", {mlflow['unsent_rows']} rows the server did not take" if mlflow["unsent_rows"] else ""
    if mlflow["ended"] is None:
        state = f"left RUNNING by a learner stopped before it could end it{unsent}"
    elif mlflow["ended"] == "unknown":  # written by a meshrl that did not record the end
        state = f"its end is not recorded here{unsent}"
    else:
        state = f"ended {mlflow['ended']}{unsent}"
    todo = f": `{mlflow['flush']}` sends what it lacks and ends it" if mlflow["flush"] else ""
    return [f"MLflow run {mlflow['run_id']}: {state}{todo}"]


def describe_summary(summary: dict) -> str:
    """What `meshrl status` prints for a run no launcher is running."""
    groups, total = summary["groups"], summary["total_steps"]
    dropped = ", ".join(f"{reason} {n}" for reason, n in groups["dropped_by_reason"].items())
    version = summary["policy_version"]
    return "\n".join(
        [
            f"run {summary['run_dir']}: {summary['ended']}",
            f"steps trained {summary['steps_trained']}/{'-' if total is None else total}  "
            f"policy v{'-' if version is None else version}  final reward {number(summary['final_reward'])}",
            accuracy_line(summary["held_out"]),
            *weights_lines(summary),
            f"groups: {groups['published']} published, {groups['trained']} trained, {groups['dropped']} dropped"
            + (f" ({dropped})" if dropped else ""),
            restarts_line(summary.get("restarts", {})),
            *mlflow_line(summary.get("mlflow")),
        ]
    )


def finished_run(args) -> int:
    """Print a run's summary when no launcher runs it; LaunchError when the dir holds no run."""
    if not (RunDir(args.run_dir).config.is_file() or RunDir(args.run_dir).metrics.is_file()):
        failed = sorted(RunDir(args.run_dir).logs.glob(f"{failed_start_dir(args.run_dir, '').name}*"))
        if failed:
            raise LaunchError(
                f"no run in {args.run_dir}: its last start failed before training anything (its config and "
                f"logs: {failed[-1]}); start it again with `meshrl train` and run.dir={args.run_dir}"
            )
        find_launcher(args.run_dir)  # raises, saying what is missing
    summary = run_summary(args.run_dir)
    summary["restarts"] = restart_counts(args.run_dir)
    print(json.dumps(summary, indent=1) if args.json else describe_summary(summary))
    return 0


def run(args) -> int:
    if is_url(args.run_dir):
        return print_status(args.run_dir, args.json)
    args.run_dir = Path(args.run_dir)
    try:
        launcher = find_launcher(args.run_dir)
    except LaunchError:
        return finished_run(args)
    admin = credentials_path(secrets_dir(args.run_dir), "admin")
    try:
        # The embedded NATS admits only the run's users: read with the launcher's (admin) file.
        # With nats.tls on, the admin's TLS files too (made by meshrl.launch.secrets); launch.grpc_tls: its gRPC ones.
        tls_env = {
            **user_tls_env(secrets_dir(args.run_dir), "admin"),
            **grpc_user_env(secrets_dir(args.run_dir), "admin"),
        }
        with admin_credentials(admin, tls_env) if admin.is_file() else contextlib.nullcontext():
            status = asyncio.run(gather_status(launcher, timeout_s=args.timeout))
    except BusUnavailable as err:
        raise LaunchError(f"cannot reach the run's NATS at {launcher.nats_url}: {err}") from None
    status["restarts"] = restart_counts(args.run_dir)  # RUN_DIR/restarts.jsonl, every launcher of the run
    print(json.dumps(status, indent=1) if args.json else describe(status))
    return 0
