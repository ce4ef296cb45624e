"""`meshrl doctor [CONFIG] [--nats URL] [--skip KEY ...]`: is this machine and config ready to run?

Prints one row per check (PASS / FAIL / SKIP / WARN, seconds, what was found) and a FIX line
under each failure or warning (a warning does not fail the doctor). Exit 0 when nothing failed;
2 when the config is refused (it does not load, the model cannot take its settings, the data is
missing: what `meshrl train` refuses with exit 2; nothing else is then started); 1 when the
machine fails a check.
"""

from __future__ import annotations

from meshrl.cli import about
from meshrl.cli.doctor.check import FAIL, WARN, Check
from meshrl.cli.doctor.run import CHECKS, config_refused, run_doctor
from meshrl.service.args import nats_url


def render_table(results: list[Check]) -> str:
    width = max(len(r.name) for r in results)
    lines = [f"{'status':<6}  {'check':<{width}}  {'time':>6}  detail"]
    for r in results:
        lines.append(f"{r.status.upper():<6}  {r.name:<{width}}  {r.seconds:>5.1f}s  {r.detail}")
        if r.status in (FAIL, WARN):
            lines.append(f"{'':<6}  FIX: {r.fix}")
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "skip", "warn")}
    warned = f", {counts['warn']} warned" if counts["warn"] else ""
    lines.append(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped{warned}")
    return "\n".join(lines)


def cmd_doctor(args) -> int:
    results = run_doctor(args.config, nats_url=args.nats, skip=args.skip or (), keep_checkpoints=args.keep_checkpoints)
    print(render_table(results), flush=True)
    if config_refused(results):
        return 2
    return 0 if all(r.ok for r in results) else 1


def add_subcommand(subparsers) -> None:
    """Register `meshrl doctor` on an argparse subparsers object."""
    p = subparsers.add_parser("doctor", help=about("doctor"))
    p.add_argument("config", nargs="?", help="run config YAML (without it only machine checks run)")
    p.add_argument("--nats", default=None, type=nats_url, help="NATS URL to check instead of the config's nats.url")
    p.add_argument(
        "--skip", nargs="*", choices=list(CHECKS), metavar="CHECK", help=f"checks to leave out: {', '.join(CHECKS)}"
    )
    p.add_argument(
        "--keep-checkpoints",
        type=int,
        default=None,
        help="checkpoints the disk must hold (K; default learner.keep_checkpoints)",
    )
    p.set_defaults(func=cmd_doctor)


add_parser = add_subcommand  # the name meshrl.cli.main's SUBCOMMANDS loop calls
