"""A textarena game as a meshrl Environment: each Reset/Step/Close is one call to the library
worker child that holds the games (handlers.py, in the textarena venv).

    cls, info = await start_worker_environment(TextArenaEnvironment, settings, block, HANDLERS, python, params)
    serve({"guess": cls}, port=50090)

The mapping (docs/environments.md, "Environments you already have"):
- Reset: a new game, seeded with the group's seed (`group_seed`, else the episode's; 0: unseeded), so
  every episode of a group plays the same game; its prompt is the observation.
- Step: the model's whole turn is the player's action (each game reads its own format, e.g.
  GuessTheNumber's `[5]`); the game's new messages are the observation; when the game ends its
  reward (textarena's, e.g. 1 for a win, partial credit for some games) is the turn's reward and
  its game info (reason, invalid moves, turn count) the turn's info.
- A child that died is started again for the next Reset; the games it held are gone
  (NOT_FOUND: their groups are dropped, never trained half-done): worker_environment.py.
"""

from __future__ import annotations

from meshrl.env_sdk import Reset, Step
from meshrl.services.environment.adapters.worker_environment import WorkerEnvironment


class TextArenaEnvironment(WorkerEnvironment):
    library, subject_key = "textarena", "game"

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
