"""A textarena game as a meshrl Environment: each Reset/Step/Close is one call to the library
worker child that holds the games (handlers.py, in the textarena venv).

    cls = textarena_environment("guess", block, worker)
    serve({"guess": cls}, port=50090)

The mapping (docs/environments.md, "Environments you already have"):
- Reset: a new game, seeded with the group's seed (`group_seed`, else the episode's; 0: unseeded), so
  every episode of a group plays the same game; its prompt is the observation.
- Step: the model's whole turn is the player's action (each game reads its own format, e.g.
  GuessTheNumber's `[5]`); the game's new messages are the observation; when the game ends its
  reward (textarena's, e.g. 1 for a win, partial credit for some games) is the turn's reward and
  its game info (reason, invalid moves, turn count) the turn's info.
- A child that died is started again for the next Reset; the games it held are gone
  (NOT_FOUND: their groups are dropped, never trained half-done).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from meshrl.config.textarena import TextArenaConfig
from meshrl.env_sdk import Environment, EnvError, Reset, Step
from meshrl.services.environment.adapters.textarena.paths import init_params
from meshrl.transport.library import LibraryWorker, WorkerDied, WorkerError, WorkerTimeout


def textarena_environment(name: str, block: TextArenaConfig, worker: LibraryWorker) -> type[Environment]:
    """The Environment class playing `block.game` under the run's environment name."""
    attrs = {"name": name, "block": block, "worker": worker, "revive_lock": asyncio.Lock()}
    return type("TextArenaEnvironment", (TextArenaEnvironment,), attrs)


class TextArenaEnvironment(Environment):
    block: ClassVar[TextArenaConfig]
    worker: ClassVar[LibraryWorker]
    revive_lock: ClassVar[asyncio.Lock]

    def __init__(self) -> None:
        super().__init__()
        self.open = False  # the child holds this game

    async def reset(self, task) -> Reset:
        await self.revive()
        # the group's seed: every episode of a GRPO group plays the same game, so their rewards compare
        seed = task.group_seed or task.seed
        answer = await self.ask("reset", {"episode_id": task.episode_id, "seed": seed or None})
        self.open = True
        return Reset([answer["observation"]], info={"game": self.block.game})

    async def step(self, turn) -> Step:
        answer = await self.ask("step", {"episode_id": self.task.episode_id, "action": turn.text})
        self.open = not answer["done"]
        shown = [answer["observation"]] if answer["observation"] else []  # a game may end in silence
        return Step(shown, reward=answer["reward"], done=answer["done"], info=answer["info"])

    async def close(self) -> None:
        if self.open and self.worker.alive:
            self.open = False
            await self.ask("close", {"episode_id": self.task.episode_id})

    @classmethod
    async def revive(cls) -> None:
        """Start the child again when it died (its games are lost; new ones can begin)."""
        async with cls.revive_lock:
            if not cls.worker.alive:
                await cls.worker.start(init_params(cls.block))

    async def ask(self, method: str, params: dict) -> Any:
        try:
            return await self.worker.call(method, params, timeout_s=self.block.timeout_s)
        except WorkerError as err:
            if err.kind == "KeyError":
                raise EnvError.not_found(f"textarena {method}: {err.message}") from None
            raise RuntimeError(f"textarena {method} of {self.block.game}: {err}") from None
        except WorkerTimeout as err:
            raise RuntimeError(f"{err} (environment.textarena.timeout_s)") from None
        except WorkerDied as err:
            raise EnvError.not_found(f"the textarena worker holding this game died: {err}") from None
