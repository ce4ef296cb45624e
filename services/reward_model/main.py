"""The reward-model service: a learned reward (HF sequence classification) as a RewardService.

Two ways to start it. As one of the mesh's services (what `meshrl train` does for a run
with a `kind: reward_model` component; settings from the run's `reward_model` section):

    python -m meshrl.services.reward_model --nats URL --run-id RUN --config RUN_DIR/config.yaml

(process.py). Or standalone, with its settings as flags:

    python -m meshrl.services.reward_model --model DIR --port 50080 \
        [--batch-size 32] [--max-length 512] [--device auto] [--normalize running] [--clip 5]

and point a run at it like any external reward service (it scales on its own: start more
replicas behind one address), beside a rule if you like:

    reward:
      components:
        - {name: rm, kind: external, address: "localhost:50080", weight: 1.0, timeout_s: 30}
        - {name: math, kind: math_verify, weight: 1.0}

Served through meshrl.reward_sdk (health, reflection, deadlines, NaN → ERROR). Items are
micro-batched (batcher.py): one forward pass per up to --batch-size texts. The reward is
the model's score, normalised (normalize.py: running mean/std, clip); the raw score is in
the result's details as `raw_score`. Exit 2 with one line on stderr when the model cannot
be loaded.
"""

from __future__ import annotations

import argparse
import sys

from meshrl.reward_sdk import serve
from meshrl.service import run_service
from meshrl.services.reward_model.batcher import reward_fn
from meshrl.services.reward_model.normalize import RewardNormalizer
from meshrl.services.reward_model.process import RewardModelProcess
from meshrl.services.reward_model.process import __doc__ as process_doc


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a HF model dir with a num_labels=1 head")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default=None, help="bind address (default: MESHRL_BIND_HOST or 127.0.0.1)")
    parser.add_argument("--batch-size", type=int, default=32, help="texts per forward pass")
    parser.add_argument("--max-length", type=int, default=512, help="tokens per text (truncated beyond)")
    parser.add_argument("--device", default="auto", help="auto (GPU when available), cpu, cuda, cuda:1")
    parser.add_argument("--normalize", choices=["none", "running"], default="none")
    parser.add_argument("--clip", type=float, default=None, help="bound |reward| (after normalising)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """The mesh's contract (`--config`: process.py, what `meshrl train` starts) or standalone."""
    if "--config" in (sys.argv[1:] if argv is None else argv):
        return run_service(RewardModelProcess(), argv, description=process_doc.splitlines()[0])
    return main_standalone(argv)


def main_standalone(argv: list[str] | None = None) -> int:
    from meshrl.services.reward_model.model import (
        RewardModel,
    )  # lazy: torch/transformers (seconds): config errors fail fast first

    args = parse_args(argv)
    try:
        normalizer = RewardNormalizer(args.normalize, args.clip)
        model = RewardModel(args.model, device=args.device, max_length=args.max_length)
    except (OSError, ValueError) as err:
        print(f"reward_model service: {err}", file=sys.stderr)
        return 2
    serve(reward_fn(model, normalizer, max_batch=args.batch_size), port=args.port, host=args.host, name="reward-model")
    return 0
