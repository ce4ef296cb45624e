"""Make a cancel that nats-py can lose stick, so a stopping consumer loop really stops.

nats-py's `fetch` waits through `asyncio.wait_for`. On Python 3.11, when the task is
cancelled at the moment the awaited message arrives, `wait_for` returns the message and
drops the CancelledError (bpo-42130; fixed in 3.12). A loop around `fetch` then keeps
running after its task was cancelled, and whoever awaits that task hangs (a CI run hung
15 minutes stopping a rollout replica). The task still counts the request
(`Task.cancelling()`), so the loops call `raise_if_cancelled` after every fetch.
"""

import asyncio


async def raise_if_cancelled(unprocessed=()) -> None:
    """Raise CancelledError if this task was asked to stop; nak `unprocessed` first so
    another consumer gets those messages now rather than after their ack wait."""
    task = asyncio.current_task()
    if task is None or not task.cancelling():
        return
    for msg in unprocessed:
        try:
            await msg.nak()
        except Exception:  # noqa: BLE001 - best effort: the server redelivers after ack_wait anyway
            pass
    raise asyncio.CancelledError
