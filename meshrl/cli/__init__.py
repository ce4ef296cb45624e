"""The `meshrl` command: one module per command (or family of commands), listed here.

meshrl.cli.main imports only the module of the command being run, so a module imports what
its command needs at its top and `meshrl --help` imports none of them; `about(name)` is the
one line `meshrl --help` shows for a command, which its module's parser shows too.
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    module: str  # whose add_parser(subparsers) registers the command (and its siblings)
    about: str


COMMANDS = {
    "train": Command("meshrl.cli.train", "validate a run config and run it on this machine"),
    "serve": Command("meshrl.cli.serve", "run one service (cluster use)"),
    "scale": Command("meshrl.cli.scale", "add or remove rollout/reward/environment/reference replicas of a local run"),
    "status": Command(
        "meshrl.cli.status", "show a running run (RUN_DIR or gateway URL): learner step and the live replicas"
    ),
    "pause": Command("meshrl.cli.control", "pause a running run after its current step (local RUN_DIR or gateway URL)"),
    "resume": Command("meshrl.cli.control", "resume a paused run"),
    "checkpoint": Command("meshrl.cli.control", "write a checkpoint of a running run now, after its current step"),
    "stop": Command("meshrl.cli.control", "stop a running run (it checkpoints first)"),
    "models": Command("meshrl.cli.models", "get models for runs"),
    "data": Command("meshrl.cli.data", "make data sets"),
    "plot": Command("meshrl.cli.plot.cli", "draw a run's training curves (metrics.jsonl) to a PNG"),
    "trace": Command("meshrl.cli.trace", "show one prompt group's trace across services as a waterfall"),
    "doctor": Command("meshrl.cli.doctor.cli", "check this machine and a run config before a run"),
    "eval": Command("meshrl.cli.eval", "evaluate a checkpoint or exported model on a held-out file"),
    "algos": Command("meshrl.cli.algos", "list the registered algorithm parts, options and papers"),
    "plan": Command("meshrl.cli.plan", "batch arithmetic and the memory each service needs per device"),
    "health": Command("meshrl.cli.health", "check a gRPC server's grpc.health.v1 status"),
    "gateway": Command("meshrl.cli.gateway", "serve the run API and the dashboard for a runs root"),
    "reward": Command("meshrl.cli.reward", "reward-service tools: `meshrl reward check ADDRESS`"),
    "env": Command("meshrl.cli.env", "environment-service tools: `meshrl env check ADDRESS`"),
    "certs": Command(
        "meshrl.cli.certs", "TLS certificates for an environment or reward service meshrl does not launch"
    ),
    "trackers": Command(
        "meshrl.cli.trackers", "send a run's MLflow rows the server did not take: `meshrl trackers flush RUN_DIR`"
    ),
    "checkpoints": Command("meshrl.cli.checkpoints", "list, tag or prune a run's checkpoints"),
    "rollback": Command("meshrl.cli.checkpoints", "make an earlier checkpoint current"),
    "export": Command("meshrl.cli.checkpoints", "write a checkpoint as a Hugging Face model dir"),
}


def about(name: str) -> str:
    return COMMANDS[name].about
