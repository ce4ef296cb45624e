"""`meshrl scale RUN_DIR_OR_URL rollout=3 reward=2`: change how many replicas a running run keeps.

For a run started here by `meshrl train` (its launcher must be running). The wanted counts
go to RUN_DIR/scale.json, where the launcher picks them up within a second: it starts new
replicas with the next ids (a rollout loads the run's current weights before it takes a
prompt) or stops the highest ones with SIGTERM (they hand back their work and leave). Only
rollout, reward, reward_model, environment (`env=N`) and reference scale; an environment
replica that leaves takes its open episodes with it (their groups are dropped with that reason). Each request is recorded in RUN_DIR/audit.jsonl (who,
when, what) and on the run's events subject. Watch the result with `meshrl status RUN_DIR`.

Through a gateway: `MESHRL_GATEWAY_TOKEN=... meshrl scale http://HOST:PORT/runs/NAME rollout=2`
asks its ScaleService (operator role; one call per service, each audited with the token's
name). In a cluster, scale the Deployments instead (`kubectl scale`, or KEDA on stream lag).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from meshrl.cli import about
from meshrl.errors import LaunchError
from meshrl.run.audit import record_and_announce
from meshrl.run.presence import find_launcher
from meshrl.run.remote import act, is_url
from meshrl.run.scale import parse_counts, write_request


def add_parser(sub) -> None:
    p = sub.add_parser(
        "scale", help=about("scale"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "run_dir",
        metavar="RUN_DIR_OR_URL",
        help="the run dir of a running `meshrl train`, or a "
        "gateway run URL http://HOST:PORT/runs/NAME (operator token in $MESHRL_GATEWAY_TOKEN)",
    )
    p.add_argument("counts", nargs="+", metavar="SERVICE=COUNT", help="e.g. rollout=3 reward=2 env=2")
    p.set_defaults(func=run)


def check_in_run(counts: dict[str, int], kept: dict[str, int], run_dir: Path) -> None:
    """A service this run does not have (the reference of a run without KL, sampling of an
    offline run) cannot be scaled into existence: its consumers and config are not there."""
    absent = [name for name in counts if name not in kept]
    if absent:
        raise LaunchError(
            f"the run in {run_dir} has no {' or '.join(absent)} service "
            f"(it runs: {', '.join(f'{k} ×{v}' for k, v in kept.items()) or 'only the learner'})"
        )


def run(args) -> int:
    counts = parse_counts(args.counts)
    if is_url(args.run_dir):
        for service, n in counts.items():
            print(act(args.run_dir, "scale", {"service": service, "replicas": n}))
        return 0
    args.run_dir = Path(args.run_dir)
    launcher = find_launcher(args.run_dir)
    check_in_run(counts, launcher.replicas, args.run_dir)
    write_request(args.run_dir, counts)
    changes = {name: {"from": launcher.replicas[name], "to": n} for name, n in counts.items()}
    asyncio.run(record_and_announce(args.run_dir, launcher, "scale", run_id=launcher.run_id, changes=changes))
    shown = ", ".join(f"{name} ×{c['from']} → ×{c['to']}" for name, c in changes.items())
    print(
        f"asked the launcher (pid {launcher.pid}) of run {launcher.run_id}: {shown}; "
        f"watch it with `meshrl status {args.run_dir}`"
    )
    return 0
