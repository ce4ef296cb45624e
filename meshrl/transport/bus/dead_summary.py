"""What the run's dead-letter stream holds, for `meshrl status`: counts by stage and reason.

    summary = await dead_letter_summary(bus.js, run_id)
    summary == {"total": 3, "by_stage": {"generated": 2, "scored": 1},
                "reasons": [{"stage": "generated", "reason": "DecodeError", "count": 2,
                             "example": "DecodeError: Error parsing message ..."}, ...]}

The reason is the error type (the text before the first ':' of the Meshrl-Error header),
so one kind of failure is one row whatever its details; `example` is the newest full text.
Reads at most `limit` newest letters by sequence (direct gets, no consumer is created).
"""

from collections import Counter

from nats.js.errors import NotFoundError

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.dead import ERROR_HEADER


def reason_of(error: str) -> str:
    head = error.split(":", 1)[0].strip()
    return head or "unknown"


async def newest_letters(js, stream: str, state, limit: int) -> list[dict]:
    """Headers of the newest `limit` letters; `state` is the stream's state from stream_info."""
    first, last = state.first_seq, state.last_seq
    letters = []
    for seq in range(last, max(first, last - limit + 1) - 1, -1):
        try:
            raw = await js.get_msg(stream, seq)
        except NotFoundError:
            continue
        letters.append(dict(raw.headers or {}))
    return letters


async def dead_letter_summary(js, run_id: str, limit: int = 500) -> dict:
    stream = names.dead_stream(run_id)
    state = (await js.stream_info(stream)).state
    total = state.messages
    counts, examples, by_stage = Counter(), {}, Counter()
    for headers in await newest_letters(js, stream, state, limit) if total else []:
        stage, error = headers.get("Meshrl-Stage", "?"), headers.get(ERROR_HEADER, "")
        key = (stage, reason_of(error))
        counts[key] += 1
        examples.setdefault(key, error)  # newest first: the first seen is the newest
        by_stage[stage] += 1
    reasons = [{"stage": s, "reason": r, "count": n, "example": examples[(s, r)]} for (s, r), n in counts.most_common()]
    return {"total": total, "by_stage": dict(by_stage), "reasons": reasons}
