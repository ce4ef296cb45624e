"""The textarena adapter's handlers script: run by the library worker child in the textarena
venv (meshrl/transport/library/child.py), it imports textarena and nothing of meshrl.

    init(game, args)                       -> {"game": raw id, "textarena": version}
    reset(episode_id, seed)                -> {"observation": text}
    step(episode_id, action)               -> {"observation": text, "done": bool, "reward": float | None, "info": {...}}
    close(episode_id)                      -> None

One game instance per episode, on the game's "-raw" version: without textarena's observation
wrappers each turn shows only the messages that are new (the model keeps its own history),
never the model's own action echoed back. The game's reward (textarena's rewards[0], given when
the game ends) is the last turn's reward; the game's info at the end is that turn's info.
textarena seeds Python's global `random` at reset and games draw from it while they play, so
one lock serialises the calls (games are small; the lock keeps seeded episodes repeatable).
"""

from __future__ import annotations

import threading

import textarena as ta
from textarena.envs.registration import ENV_REGISTRY

GAME: dict = {}
EPISODES: dict = {}
LOCK = threading.Lock()


def raw_id(game: str) -> str:
    if game not in ENV_REGISTRY:
        close = sorted(g for g in ENV_REGISTRY if g.split("-")[0].lower() == game.split("-")[0].lower())
        raise ValueError(f"textarena has no game {game!r}" + (f"; registered: {', '.join(close[:8])}" if close else ""))
    for suffix in ("-raw", "-train"):
        game = game.removesuffix(suffix)
    return f"{game}-raw" if f"{game}-raw" in ENV_REGISTRY else game


def init(game: str, args: dict) -> dict:
    raw = raw_id(game)
    try:  # one trial game: a two-player game or a bad argument fails here, at start
        trial = ta.make(raw, **args)
        trial.reset(num_players=1, seed=0)
        trial.get_observation()
    except Exception as err:
        raise ValueError(
            f"{game} cannot be played by one player with args {args}: {type(err).__name__}: {err}"
        ) from None
    GAME.update(id=raw, args=args)
    return {"game": raw, "textarena": getattr(ta, "__version__", "")}


def text_of(observation) -> str:
    """The game's messages for the player, without the player's own action echoed back."""
    return "\n".join(message for _, message, kind in observation if kind != ta.ObservationType.PLAYER_ACTION)


def reset(episode_id: str, seed: int | None = None) -> dict:
    with LOCK:
        env = ta.make(GAME["id"], **GAME["args"])
        env.reset(num_players=1, seed=seed)
        _, observation = env.get_observation()
        EPISODES[episode_id] = env
    return {"observation": text_of(observation)}


def step(episode_id: str, action: str) -> dict:
    env = EPISODES.get(episode_id)
    if env is None:
        raise KeyError(f"episode {episode_id!r} is not open in this textarena worker")
    with LOCK:
        done, info = env.step(action)
        _, observation = env.get_observation()
        if not done:
            return {"observation": text_of(observation), "done": False, "reward": None, "info": plain(info)}
        rewards, game_info = env.close()
    EPISODES.pop(episode_id, None)
    reward = (rewards or {}).get(0)
    details = {**plain(info), **plain((game_info or {}).get(0, {}))}
    return {"observation": text_of(observation), "done": True, "reward": reward, "info": details}


def close(episode_id: str) -> None:
    EPISODES.pop(episode_id, None)


def plain(value) -> dict:
    """A JSON-able dict of what textarena reports (its values may be sets or enums)."""
    if not isinstance(value, dict):
        return {}
    return {str(k): v if isinstance(v, (str, int, float, bool, type(None))) else str(v) for k, v in value.items()}


def info() -> dict:
    """What init set up (for the start-up probe)."""
    return {"game": GAME.get("id"), "args": GAME.get("args"), "textarena": getattr(ta, "__version__", "")}
