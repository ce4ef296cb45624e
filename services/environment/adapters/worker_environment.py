"""What every adapter whose library runs in a library worker child shares (textarena, verifiers):
an env_sdk Environment class bound to the run's name, its config block and one worker per
replica; the child started at start-up (a failure is one ConfigError line, exit 2) and again
after it died (its episodes are lost: NOT_FOUND, their groups dropped, never trained half-done);
each call's failures mapped onto env_sdk statuses.

    class GameEnvironment(WorkerEnvironment):
        library, subject_key = "textarena", "game"
        async def reset(self, task): ...; async def step(self, turn): ...

    cls = await start_worker_environment(GameEnvironment, settings, settings.textarena, HANDLERS, python)
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, ClassVar

from meshrl.config import ConfigError
from meshrl.env_sdk import EnvError, Environment
from meshrl.transport.library import LibraryWorker, WorkerDied, WorkerError, WorkerStartError, WorkerTimeout

log = logging.getLogger("meshrl.services.environment")


class WorkerEnvironment(Environment):
    library: ClassVar[str]  # "textarena": the config block's name and the words of messages
    subject_key: ClassVar[str]  # the block's field that names what it plays ("game", "module")
    # handler exceptions that are the caller's fault (a row not there, an episode not held)
    caller_errors: ClassVar[dict[str, Callable[[str], Exception]]] = {"KeyError": EnvError.not_found}
    block: ClassVar[Any]
    worker: ClassVar[LibraryWorker]
    init_params: ClassVar[dict]
    revive_lock: ClassVar[asyncio.Lock]

    def __init__(self) -> None:
        super().__init__()
        self.open = False  # the child holds this episode

    async def close(self) -> None:
        if self.open and self.worker.alive:
            self.open = False
            await self.ask("close", {"episode_id": self.task.episode_id})

    @classmethod
    async def revive(cls) -> None:
        """Start the child again when it died (its episodes are lost; new ones can begin)."""
        async with cls.revive_lock:
            if not cls.worker.alive:
                await cls.worker.start(cls.init_params)

    async def ask(self, method: str, params: dict) -> Any:
        try:
            return await self.worker.call(method, params, timeout_s=self.block.timeout_s)
        except WorkerError as err:
            if (make := self.caller_errors.get(err.kind)) is not None:
                raise make(f"{self.library} {method}: {err.message}") from None
            subject = getattr(self.block, self.subject_key)
            raise RuntimeError(f"{self.library} {method} of {subject}: {err}") from None
        except WorkerTimeout as err:
            raise RuntimeError(f"{err} (environment.{self.library}.timeout_s)") from None
        except WorkerDied as err:
            raise EnvError.not_found(f"the {self.library} worker holding this episode died: {err}") from None


async def start_worker_environment(
    base: type[WorkerEnvironment], settings, block, handlers: str, python: str, init_params: dict
) -> tuple[type[WorkerEnvironment], dict]:
    """The Environment class serving `block` under the run's environment name, its child started
    (and what the handlers' init said); a child that cannot start is a ConfigError line."""
    worker = LibraryWorker(python, handlers, base.library, start_timeout_s=block.start_timeout_s)
    try:
        info = await worker.start(init_params)
    except WorkerStartError as err:
        subject = getattr(block, base.subject_key)
        raise ConfigError(f"environment.{base.library} ({base.subject_key} {subject!r}): {err}") from None
    attrs = {"name": settings.name, "block": block, "worker": worker, "init_params": init_params}
    return type(base.__name__, (base,), {**attrs, "revive_lock": asyncio.Lock()}), info


async def stop_worker_environment(cls: type[WorkerEnvironment]) -> None:
    await cls.worker.close()
