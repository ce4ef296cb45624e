"""The requests the suite sends: realistic items, ids unique per call (so cross-talk between
concurrent calls shows up as unknown ids)."""

from __future__ import annotations

import json

from meshrl.api.reward.v1 import reward_pb2

UNICODE = ["ünïcödé ✓", "数学の答えは 7", "مرحبا بالعالم", "emoji 🧮🔢 and a ZWJ 👩‍💻", "tab\tnew\nline"]


def item(id: str, response: str, *, prompt: str = "What is 3+4?", truth="7") -> reward_pb2.ScoreItem:
    return reward_pb2.ScoreItem(
        id=id,
        prompt=f"<|user|>{prompt}<|assistant|>",
        response=response,
        prompt_messages=[reward_pb2.ChatMessage(role="user", content=prompt)],
        ground_truth_json=json.dumps(truth),
        data_source="meshrl-reward-check",
        extra_json=json.dumps({"check": id.split("/")[0]}),
        response_tokens=max(1, len(response) // 4),
        finish_reason=reward_pb2.FINISH_REASON_STOP,
    )


def request(component: str, items: list[reward_pb2.ScoreItem]) -> reward_pb2.ScoreRequest:
    return reward_pb2.ScoreRequest(run_id="meshrl-reward-check", component=component, items=items)


def basic(component: str, tag: str = "basic") -> reward_pb2.ScoreRequest:
    answers = ["The answer is 7.", "8", "7", "I think it is seven because 3+4=7", "no idea"]
    return request(component, [item(f"{tag}/{i}", a) for i, a in enumerate(answers)])


def large_batch(component: str, n: int = 1000) -> reward_pb2.ScoreRequest:
    return request(component, [item(f"batch/{i}", f"The answer is {i % 10}.") for i in range(n)])


def megabyte(component: str) -> reward_pb2.ScoreRequest:
    long = ("The answer is 7. " * 61681)[: 1 << 20]  # exactly 1 MiB of ASCII
    wide = "七" * ((1 << 20) // 3)  # ≈1 MiB of 3-byte UTF-8
    return request(component, [item("mib/0", long), item("mib/1", wide), item("mib/2", "7")])


def unicode_and_empty(component: str) -> reward_pb2.ScoreRequest:
    items = [item(f"text/{i}", s, prompt=s) for i, s in enumerate(UNICODE)]
    items.append(item("text/empty-response", ""))
    items.append(item("text/empty-prompt", "7", prompt=""))
    items.append(reward_pb2.ScoreItem(id="text/bare", response="7"))  # no optional field set
    items.append(item("text/empty-truth", "7", truth=""))
    return request(component, items)
