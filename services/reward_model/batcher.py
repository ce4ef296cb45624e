"""Micro-batching: items that arrive together (one Score call's items, or concurrent calls)
go through the model in one forward pass of up to `max_batch` texts.

    batcher = MicroBatcher(score_texts, max_batch=32, max_wait_s=0.005)
    value = await batcher.submit(text)      # from many coroutines at once

The first waiting text starts a batch; texts queued within `max_wait_s` join it. The model
runs in a thread (the event loop keeps serving). `sizes` records each batch's size.
`reward_fn(model, normalizer)` is the SDK's per-item function whose items meet in one
(both ways of starting the service use it: main.py, process.py).
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from meshrl.reward_sdk import Item


class MicroBatcher:
    def __init__(self, fn: Callable[[list[str]], list[Any]], *, max_batch: int = 32, max_wait_s: float = 0.005):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.fn, self.max_batch, self.max_wait_s = fn, max_batch, max_wait_s
        self.queue: asyncio.Queue = asyncio.Queue()
        self.task: asyncio.Task | None = None
        self.sizes: list[int] = []

    async def submit(self, text: str) -> Any:
        if self.task is None or self.task.done():
            self.task = asyncio.create_task(self.run())
        done = asyncio.get_running_loop().create_future()
        await self.queue.put((text, done))
        return await done

    async def collect(self) -> list[tuple[str, asyncio.Future]]:
        batch = [await self.queue.get()]
        await asyncio.sleep(self.max_wait_s)  # let the rest of this call's items queue up
        while len(batch) < self.max_batch and not self.queue.empty():
            batch.append(self.queue.get_nowait())
        return batch

    async def run(self) -> None:
        while True:
            batch = await self.collect()
            self.sizes.append(len(batch))
            try:
                results = await asyncio.to_thread(self.fn, [text for text, _ in batch])
            except Exception as err:  # noqa: BLE001 - every waiting item gets the error
                for _, done in batch:
                    if not done.done():
                        done.set_exception(err)
                continue
            for (_, done), result in zip(batch, results, strict=True):
                if not done.done():
                    done.set_result(result)

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


def reward_fn(model, normalizer, *, max_batch: int = 32):
    """An async per-item function for the SDK; items meet in the MicroBatcher."""

    def score_texts(texts: list[str]) -> list[tuple[float, float]]:
        raw = model.score(texts)
        return list(zip(normalizer(raw), raw))

    batcher = MicroBatcher(score_texts, max_batch=max_batch)

    async def reward(item: Item) -> tuple[float, dict[str, float]]:
        value, raw = await batcher.submit(model.text(item.prompt, item.messages, item.response))
        return value, {"raw_score": raw}

    reward.batcher = batcher
    return reward
