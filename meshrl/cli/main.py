"""The `meshrl` command line.

    meshrl train CONFIG.yaml [key=value ...] [--dry-run]
    meshrl serve {rollout,reward,reward_model,environment,reference,learner} --nats URL --run-id RUN --config FILE
    meshrl scale RUN_DIR_OR_URL rollout=3 reward=2 env=2   |   meshrl status RUN_DIR_OR_URL [--json]
    meshrl pause|resume|checkpoint|stop RUN_DIR_OR_URL [--reason TEXT]
    meshrl models fetch-smollm2 [--cache-dir DIR]
    meshrl data arithmetic|pairs --out FILE --n N ...
    meshrl data reasoning-gym --task NAME[,NAME] --n N --out FILE ...   |   meshrl data verifiers --module M --out FILE
    meshrl plot RUN_DIR [--out F]
    meshrl trace RUN_DIR [GROUP_ID]
    meshrl doctor [CONFIG]
    meshrl checkpoints {list,tag,prune,convert,key} ...  |  meshrl rollback RUN_DIR --to STEP
      (list and rollback also take a gateway URL)
    meshrl export RUN_DIR --step N OUT_DIR
    meshrl eval CHECKPOINT_OR_EXPORT DATA [--out FILE] [key=value ...]
    meshrl algos [FAMILY]
    meshrl health HOST:PORT [--service NAME]   (a gRPC server's grpc.health.v1 status)
    meshrl reward check HOST:PORT [--tls-ca F --tls-cert F --tls-key F] [--token-file F] [--component NAME]
    meshrl plan CONFIG [key=value ...] [--device h100-80gb]   (memory per service and device)
    meshrl env check HOST:PORT [--environment NAME] [--task ROW.json] [--tls-* F] [--token-file F]
    meshrl gateway serve --runs-root DIR [--port N --grpc-port M]   (run API + dashboard)
    meshrl certs issue --kind environment|reward --name N --host H --out DIR   (TLS for your service)
    meshrl trackers flush RUN_DIR   (metrics an MLflow server did not take)

RUN_DIR_OR_URL: a local run dir, or a gateway's run page http://HOST:PORT/runs/NAME with the
token in $MESHRL_GATEWAY_TOKEN (meshrl.run.remote).

Errors a user can fix (a bad config, a missing file, NATS unreachable) are printed as one
message on stderr with exit status 2 and no traceback; a run that fails exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

from meshrl.cli import COMMANDS
from meshrl.errors import ConfigError, LaunchError, RunFailed, StopRequested
from meshrl.inputs.checkpoint.errors import CheckpointError

USER_ERRORS = (ConfigError, LaunchError, CheckpointError, FileNotFoundError, FileExistsError, PermissionError)


class OneLineParser(argparse.ArgumentParser):
    """argparse's usage errors as one line on stderr, exit 2 (argparse prints the whole usage
    first): 'meshrl gateway serve: error: argument --port: invalid int value: 'x' (see --help)'.
    Subcommand parsers are made of the same class (add_subparsers' default)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def command_of(argv: list[str]) -> str | None:
    """The command named in `argv` (its first word that is no option), if it is one."""
    words = [a for a in argv if not a.startswith("-")]
    return words[0] if words and words[0] in COMMANDS else None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: the full parser of its command, whose module is imported now,
    and a one-line entry for every other command (their modules stay unimported)."""
    parser = OneLineParser(prog="meshrl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = command_of(sys.argv[1:] if argv is None else argv)
    owner = COMMANDS[chosen].module if chosen else None
    for name, command in COMMANDS.items():
        if command.module == owner:
            if name == chosen:
                importlib.import_module(owner).add_parser(sub)  # registers its siblings too
        else:
            sub.add_parser(name, help=command.about)
    return parser


def parse(argv: list[str] | None) -> argparse.Namespace:
    """Parse; `train` takes key=value anywhere, `serve` passes unknown flags through."""
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if getattr(args, "accepts_extra_args", False):
        args.extra = extra
    elif getattr(args, "accepts_extra_overrides", False) and all("=" in e and not e.startswith("-") for e in extra):
        args.overrides = [*args.overrides, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    """The command's exit status; 141 when its reader went away (`meshrl status RUN | head -2`)."""
    try:
        try:
            return run_command(parse(argv))
        finally:
            sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at exit
    except BrokenPipeError:
        return reader_gone()


def reader_gone() -> int:
    """A reader that closed early is no error (`head` has what it wanted): no traceback, and
    stdout pointed at /dev/null so the interpreter's last flush does not fail again. 141 is
    what a shell reports for a writer ended by SIGPIPE."""
    with contextlib.suppress(OSError, ValueError):  # a stdout with no file descriptor (captured)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 141


def run_command(args: argparse.Namespace) -> int:
    """The command; errors a user can fix as one line, exit 2 (see the module docstring)."""
    try:
        return args.func(args)
    except USER_ERRORS as err:
        print(f"meshrl: error: {err}", file=sys.stderr)
        return 2
    except RunFailed as err:
        print(f"meshrl: run failed: {err}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, StopRequested) as err:  # StopRequested is a BaseException too
        print(f"meshrl: stopped ({err or 'Ctrl-C'}); every process it started has been stopped", file=sys.stderr)
        return 130 if isinstance(err, KeyboardInterrupt) else 143


if __name__ == "__main__":
    sys.exit(main())
