"""`meshrl pause|resume|checkpoint|stop RUN_DIR_OR_URL`: steer a running run, here or through a gateway.

    meshrl pause runs/grpo-0412 --reason "look at the KL"        # a local run (its launcher running)
    meshrl checkpoint runs/grpo-0412 [--tag NAME]                # prints the checkpoint's step and path
    MESHRL_GATEWAY_TOKEN=... meshrl resume http://127.0.0.1:8080/runs/grpo-0412

pause: the learner takes no new step (and the feeder no new prompt) after the current one;
resume: it goes on; checkpoint: one is written after the current step (answered when it is
on disk); stop: the launcher stops the run (the learner checkpoints, every process it started
exits), as Ctrl-C in its terminal would.

RUN_DIR: RUN_DIR/launcher.json names the learner's control address (LearnerControlService,
called with the run's admin gRPC TLS files from RUN_DIR/secrets) and the launcher's pid (stop
is SIGTERM to it); the action is recorded in RUN_DIR/audit.jsonl (who = $USER, via cli) and on
the run's events subject. URL (the dashboard's run page http://HOST:PORT/runs/NAME): the
gateway's PauseRun / ResumeRun / CheckpointRun / StopRun, which need an operator token in
$MESHRL_GATEWAY_TOKEN and record the action with the token's name.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from meshrl.errors import LaunchError
from meshrl.gateway import actions
from meshrl.gateway.errors import GatewayError
from meshrl.run.audit import current_user, record_and_announce
from meshrl.run.presence import find_launcher
from meshrl.run.remote import act, is_url
from meshrl.run.secrets import grpc_user_env, secrets_dir
from meshrl.transport.rpc.mesh_tls import caller_env

HELP = {
    "pause": "pause a running run after its current step (local RUN_DIR or gateway URL)",
    "resume": "resume a paused run",
    "checkpoint": "write a checkpoint of a running run now, after its current step",
    "stop": "stop a running run (it checkpoints first)",
}
LEARNER_VERBS = {"pause": "Pause", "resume": "Resume", "checkpoint": "Checkpoint"}


def add_parser(sub) -> None:
    for verb, text in HELP.items():
        p = sub.add_parser(verb, help=text, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument(
            "target",
            metavar="RUN_DIR_OR_URL",
            help="the run dir of a running `meshrl train`, or a "
            "gateway run URL http://HOST:PORT/runs/NAME (operator token in $MESHRL_GATEWAY_TOKEN)",
        )
        if verb == "checkpoint":
            p.add_argument("--tag", dest="reason", default="", help="tag the checkpoint (kept by pruning)")
        else:
            p.add_argument("--reason", default="", help="why, for the audit log")
        p.set_defaults(func=run, verb=verb)


async def learner_action(run_dir: Path, verb: str, reason: str):
    """Call the local run's learner (pause / resume / checkpoint) with the run's admin gRPC TLS."""
    info = find_launcher(run_dir)
    with caller_env(grpc_user_env(secrets_dir(run_dir), "admin")):
        try:
            if verb == "checkpoint":
                return info, await actions.checkpoint(info, reason)
            return info, await actions.pause_or_resume(
                info, LEARNER_VERBS[verb], reason or f"{verb}d by {current_user()}"
            )
        except GatewayError as err:
            raise LaunchError(f"{err.message}; is the run still starting? `meshrl status {run_dir}` shows it") from None


async def act_locally(run_dir: Path, verb: str, reason: str) -> str:
    """Do `verb` to the local run and record it (audit.jsonl, the run's events subject)."""
    if verb == "stop":  # recorded first: once the launcher stops, the run's NATS is gone
        info = find_launcher(run_dir)
        await record_and_announce(run_dir, info, "stop", via="cli", run_id=info.run_id, reason=reason)
        return actions.stop(info, run_dir).message
    info, out = await learner_action(run_dir, verb, reason)
    step = out.checkpoint_step if verb == "checkpoint" else out.learner.step
    await record_and_announce(run_dir, info, verb, via="cli", run_id=info.run_id, reason=reason, step=step)
    return out.message


def run(args) -> int:
    if is_url(args.target):
        print(act(args.target, args.verb, {"reason": args.reason}))
    else:
        print(asyncio.run(act_locally(Path(args.target), args.verb, args.reason)))
    return 0
