"""The `textarena:` block of the run's environment: a single-player textarena game the
environment service plays (services/environment/adapters/textarena), in its own interpreter.

    environment:
      name: guess
      textarena:
        game: GuessTheNumber-v0     # a registered game id; its "-raw" version is played (no
                                    # observation wrappers: each turn shows only what is new)
        args: {max_turns: 10}       # keyword arguments of the game
        python: .venv-adapters/textarena/bin/python   # a venv with textarena
                                    # ("" = that default, from the checkout; bash scripts/adapter_venv.sh textarena)
        timeout_s: 30               # one reset/step answer from the game
        start_timeout_s: 120        # importing textarena and one trial reset at start

With no `address`, `meshrl train` launches the environment service that runs the adapter
(like a builtin); a game that is not registered, or needs more than one player, stops it at
start (exit 2, one line).
"""

from __future__ import annotations

from pydantic import Field

from meshrl.config.library_block import LibraryBlock


class TextArenaConfig(LibraryBlock):
    library = "textarena"
    game: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$", max_length=200)
    timeout_s: float = Field(30.0, gt=0.0, le=3600.0)
    start_timeout_s: float = Field(120.0, gt=0.0, le=3600.0)
