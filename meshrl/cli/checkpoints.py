"""Command-line handlers for checkpoints, for the `meshrl` CLI to register.

    meshrl checkpoints list RUN_DIR_OR_URL [--quick]
    meshrl checkpoints tag RUN_DIR STEP NAME
    meshrl checkpoints prune RUN_DIR --keep-last K
    meshrl checkpoints convert RUN_DIR/checkpoints/step_N --i-trust-this-file
    meshrl checkpoints key [--out DIR]      # the signing key (made once) and its public half
    meshrl rollback RUN_DIR_OR_URL --to STEP
    meshrl export RUN_DIR OUT_DIR [--step N] [--base-model DIR] [--tokenizer DIR] [--dtype D]

Wire with `add_subcommands(subparsers)` (alias `add_parser`, the convention of
`meshrl.cli.main.SUBCOMMANDS`). Each handler is `cmd_xxx(args) -> int`: 0 on success,
2 with one message on stderr for a checkpoint problem a user can fix.

`list` and `rollback` also take a gateway run URL http://HOST:PORT/runs/NAME (token in
$MESHRL_GATEWAY_TOKEN: viewer to list, admin to roll back): the gateway's ListCheckpoints
(sizes checked, as --quick) and RollbackRun (a stopped run only), through meshrl.run.remote.

`convert` is the one way to make a checkpoint this user's learner did not sign loadable: an
older meshrl's (pickled) checkpoint is converted, an unsigned or foreign one signed with the
user's checkpoint key (meshrl.inputs.checkpoint.convert). Converting an older one unpickles
it, so it runs only with --i-trust-this-file.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from meshrl.cli import about
from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.key import KEY_ENV, KEY_NAME, key_pair, key_path
from meshrl.inputs.checkpoint.layout import find_step, step_of
from meshrl.inputs.checkpoint.legacy import CONVERT_FLAG
from meshrl.inputs.checkpoint.manifest import verify_checkpoint
from meshrl.inputs.checkpoint.retention import prune, rollback, tag
from meshrl.inputs.checkpoint.scan import CheckpointInfo, latest_good_checkpoint, list_checkpoints
from meshrl.run.audit import audit_local_action as record
from meshrl.run.remote import act, call, is_url


def audit_local_action(run_dir, action: str, **what) -> None:
    """The row in RUN_DIR/audit.jsonl (and the live run's events subject): rollback and export
    change what a run is or releases, like the gateway's actions."""
    record(run_dir, action, **what)


def user_errors(handler):
    """CheckpointError → `meshrl: error: ...` on stderr, exit status 2, no traceback."""

    @functools.wraps(handler)
    def wrapped(args) -> int:
        try:
            return handler(args)
        except CheckpointError as err:
            print(f"meshrl: error: {err}", file=sys.stderr)
            return 2

    return wrapped


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def format_table(rows) -> str:
    """Plain aligned columns: STEP STATUS CREATED SIZE TAGS REASON."""
    header = ("STEP", "STATUS", "CREATED", "SIZE", "TAGS", "REASON")
    lines = [header] + [
        (str(r.step), r.status, r.created or "-", human_size(r.size), ",".join(r.tags) or "-", r.reason or "-")
        for r in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)) + "  " + line[-1] for line in lines)


def gateway_rows(url: str) -> list[CheckpointInfo]:
    """The run's checkpoints as the gateway lists them (ListCheckpoints), as local rows."""
    return [
        CheckpointInfo(int(c["step"]), None, c["status"], c["reason"], c["created"], int(c["size_bytes"]), c["tags"])
        for c in call(url, "GET", "checkpoints")["checkpoints"]
    ]


@user_errors
def cmd_checkpoints_list(args) -> int:
    rows = gateway_rows(args.run_dir) if is_url(args.run_dir) else list_checkpoints(args.run_dir, full=not args.quick)
    print(format_table(rows) if rows else f"no checkpoints in {args.run_dir}")
    return 0


@user_errors
def cmd_checkpoints_tag(args) -> int:
    path = tag(args.run_dir, args.step, args.name)
    print(f"tagged {path} as {args.name}")
    return 0


@user_errors
def cmd_checkpoints_prune(args) -> int:
    removed = prune(args.run_dir, keep_last=args.keep_last)
    for path in removed:
        print(f"removed {path}")
    print(f"pruned {len(removed)} checkpoint(s); kept the last {args.keep_last} and tagged ones")
    return 0


@user_errors
def cmd_checkpoints_convert(args) -> int:
    if not args.i_trust_this_file:
        print(
            f"meshrl: error: converting or signing {args.path} makes it loadable, and converting an older "
            f"meshrl's checkpoint unpickles it (runs any code it carries); if you trust where it came "
            f"from, run again with {CONVERT_FLAG}",
            file=sys.stderr,
        )
        return 2
    from meshrl.inputs.checkpoint.convert import (
        convert_checkpoint,
    )  # lazy: torch, only for `meshrl checkpoints convert`

    print(convert_checkpoint(args.path))
    return 0


@user_errors
@user_errors
def cmd_checkpoints_key(args) -> int:
    """Make (or find) the checkpoint signing key and write its public half beside it."""
    private = (args.out / KEY_NAME) if args.out else key_path()
    private, public = key_pair(private)
    print(f"signing key (the learner's; keep it, a new one orphans every checkpoint): {private}")
    print(f"public key (readers that only verify, e.g. the gateway): {public}")
    print(f"in containers: mount each from a Secret and point {KEY_ENV} at it (docs/guide/cluster.md)")
    return 0


@user_errors
def cmd_rollback(args) -> int:
    if is_url(args.run_dir):
        print(act(args.run_dir, "rollback", {"to_step": args.to}))
        return 0
    path = rollback(args.run_dir, args.to)
    audit_local_action(args.run_dir, "rollback", to_step=args.to, current=str(path))
    print(f"current checkpoint is now {path}; later ones moved to {path.parent / 'rolled_back'}/ (not deleted)")
    return 0


@user_errors
def cmd_export(args) -> int:
    ckpt = find_step(args.run_dir, args.step) if args.step is not None else latest_good_checkpoint(args.run_dir)
    verify_checkpoint(ckpt, full=False)  # signature and sizes: a refused checkpoint costs no torch import
    from meshrl.inputs.checkpoint.export import (
        export_hf,
    )  # lazy: torch, only for `meshrl export` (checkpoints and rollback share this module)

    out = export_hf(ckpt, args.out_dir, base_model_dir=args.base_model, tokenizer_dir=args.tokenizer, dtype=args.dtype)
    audit_local_action(args.run_dir, "export", step=step_of(ckpt), path=str(out))
    print(f"exported {ckpt.name} to {out}")
    return 0


def add_subcommands(subparsers) -> None:
    """Register `checkpoints {list,tag,prune}`, `rollback` and `export` on `subparsers`."""
    ckpts = subparsers.add_parser("checkpoints", help=about("checkpoints"))
    verbs = ckpts.add_subparsers(dest="checkpoints_command", required=True, metavar="ACTION")
    p = verbs.add_parser("list", help="steps, status (ok/corrupt/partial), size, tags")
    p.add_argument("run_dir")
    p.add_argument("--quick", action="store_true", help="check sizes only, skip sha256")
    p.set_defaults(func=cmd_checkpoints_list)
    p = verbs.add_parser("tag", help="protect a checkpoint from pruning")
    p.add_argument("run_dir"), p.add_argument("step", type=int), p.add_argument("name")
    p.set_defaults(func=cmd_checkpoints_tag)
    p = verbs.add_parser("prune", help="delete all but the last K (and tagged) checkpoints")
    p.add_argument("run_dir"), p.add_argument("--keep-last", type=int, required=True)
    p.set_defaults(func=cmd_checkpoints_prune)
    p = verbs.add_parser("convert", help="convert an older meshrl's checkpoint, or sign a foreign one, that you trust")
    p.add_argument("path", help="RUN_DIR/checkpoints/step_N")
    p.add_argument(CONVERT_FLAG, action="store_true", help="you vouch for the checkpoint (it may be unpickled)")
    p.set_defaults(func=cmd_checkpoints_convert)
    p = verbs.add_parser(
        "key", help="make the checkpoint signing key (once) and its public half, e.g. for a Secret of compose or k8s"
    )
    p.add_argument("--out", type=Path, default=None, help="a folder for the key (default: the user's key file)")
    p.set_defaults(func=cmd_checkpoints_key)
    p = subparsers.add_parser("rollback", help=about("rollback"))
    p.add_argument("run_dir"), p.add_argument("--to", type=int, required=True, metavar="STEP")
    p.set_defaults(func=cmd_rollback)
    _add_export(subparsers)


def _add_export(subparsers) -> None:
    p = subparsers.add_parser("export", help=about("export"))
    p.add_argument("run_dir"), p.add_argument("out_dir")
    p.add_argument("--step", type=int, default=None, help="default: the latest good checkpoint")
    p.add_argument("--base-model", default=None, help="HF dir with the architecture's config")
    p.add_argument("--tokenizer", default=None, help="default: the run config's model path")
    p.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"])
    p.set_defaults(func=cmd_export)


add_parser = add_subcommands
