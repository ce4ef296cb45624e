"""An external reward service: what a product team writes to plug its own reward into meshrl.

A plain function scored per item, served by `meshrl.reward_sdk.serve`, which provides the
gRPC `meshrl.reward.v1.RewardService` (protos/meshrl/reward/v1/reward.proto), the
grpc.health.v1 health service meshrl checks at start-up, reflection, tracing, deadlines, and
exceptions / NaN turned into ERROR results. Any language works (examples/external_reward_ts/
is the same service in TypeScript); contract and semantics: docs/reward-services.md.

    score = (keywords found in the response) / (number of keywords)      [1.0 if none given]
            - min(1, max(0, chars - max_chars) / max_chars)              [when --max-chars > 0]

Case-insensitive substring match. Point a run at it with:

    reward:
      components:
        - {name: keywords, kind: external, address: "localhost:50070", weight: 0.5, timeout_s: 5}

Run:    python examples/external_reward/server.py --port 50070 --keywords answer,because --max-chars 400
Check:  meshrl reward check localhost:50070
"""

import argparse
import functools
import logging

from meshrl.reward_sdk import Item, serve


def keyword_length_score(item: Item, keywords: list[str], max_chars: int) -> tuple[float, dict]:
    text = item.response.casefold()
    hits = sum(k.casefold() in text for k in keywords)
    coverage = hits / len(keywords) if keywords else 1.0
    over = max(0, len(item.response) - max_chars) / max_chars if max_chars > 0 else 0.0
    return coverage - min(1.0, over), {"keyword_hits": float(hits), "chars": float(len(item.response))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default=None, help="bind address (default: MESHRL_BIND_HOST or 127.0.0.1)")
    parser.add_argument("--keywords", default="", help="comma-separated, e.g. answer,because")
    parser.add_argument("--max-chars", type=int, default=0, help="0 = no length penalty")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    keywords = [k.strip() for k in args.keywords.split(",") if k.strip()]
    fn = functools.partial(keyword_length_score, keywords=keywords, max_chars=args.max_chars)
    serve(fn, port=args.port, host=args.host, name="keyword-reward")


if __name__ == "__main__":
    main()
