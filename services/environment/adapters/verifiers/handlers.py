"""verifiers environments for meshrl: the handlers script a library worker serves in the
verifiers venv (meshrl.transport.library; never imports meshrl). Its functions are the
worker's methods; the environment service (adapters/verifiers/environment.py) calls them.

    init(module, args)          vf.load_environment(module, **args), once per process; what it serves
    rows(split, n, seed)        the environment's dataset as meshrl prompt rows (meshrl data verifiers)
    reset(episode_id, row, split, messages)      start dataset row `row`'s episode; the first prompt
    step(episode_id, text, tool_calls, truncated) the model's turn in; the environment's answer out
    close(episode_id)           drop an episode (the rollout loop is cancelled)
    info()                      what init loaded (meshrl doctor, the launcher's start check: probe.py)

By hand: `.venv-adapters/verifiers/bin/python meshrl/transport/library/child.py THIS_FILE`, one
JSON request a line ({"id": 1, "method": "init", "params": {"module": "my_env"}}).
"""

import json
import random

import verifiers as vf
from vf_episode import Episode, EpisodeError
from vf_messages import model_response, same_messages, to_plain, tool_spec
from vf_scores import check_rubric, weights_of

ENV = None  # the loaded environment (one per worker process)
MODULE = ""
EPISODES: dict = {}  # episode id -> Episode


async def init(module: str, args: dict | None = None) -> dict:
    """Load the environment (on the event loop's thread: verifiers sets signal handlers)."""
    global ENV, MODULE
    ENV, MODULE = loaded(module, args or {}), module
    check_rubric(ENV.rubric)
    return described(ENV)


def loaded(module: str, args: dict):
    env = vf.load_environment(module, **args)
    if not isinstance(env, vf.MultiTurnEnv):
        raise TypeError(
            f"{module}.load_environment() gave a {type(env).__name__}: the adapter plays environments "
            f"built on vf.MultiTurnEnv (SingleTurnEnv, ToolEnv, StatefulToolEnv, your own MultiTurnEnv)"
        )
    if env.rubric.has_group_rewards or env.rubric.has_advantages:
        raise TypeError(
            f"{module}: its rubric has group reward functions (they score a whole group at once); "
            f"meshrl scores each episode as it ends, so only per-rollout reward functions are supported"
        )
    return env


def described(env) -> dict:
    return {
        "env": type(env).__name__,
        "rows": {"train": _count(env, "train"), "eval": _count(env, "eval")},
        "tools": [tool_spec(t) for t in env.tool_defs or []],
        "rubric": weights_of(env.rubric),
    }


def _count(env, split: str) -> int:
    ds = env.dataset if split == "train" else env.eval_dataset
    return len(ds) if ds is not None else 0


def info() -> dict:
    return described(ENV)


def dataset(split: str):
    if split not in ("train", "eval"):
        raise ValueError(f"split {split!r}: use train or eval")
    return ENV.get_dataset() if split == "train" else ENV.get_eval_dataset()


def rows(split: str = "train", n: int = -1, seed: int | None = None) -> list:
    """Rows of the environment's dataset as meshrl prompt rows, each carrying its index."""
    ds = dataset(split)
    order = list(range(len(ds)))
    if seed is not None:
        random.Random(seed).shuffle(order)
    picked = order if n is None or n < 0 else order[:n]
    return [meshrl_row(ds[i], i, split) for i in picked]


def meshrl_row(example: dict, index: int, split: str) -> dict:
    answer = example.get("answer", "")
    return {
        "prompt": [to_plain(m) for m in example["prompt"]],
        "reward_model": {"ground_truth": answer if isinstance(answer, (str, int, float)) else json.dumps(answer)},
        "data_source": f"verifiers/{MODULE}",
        "extra_info": {"verifiers": {"module": MODULE, "split": split, "row": index}},
    }


async def reset(episode_id: str, row: int, split: str = "train", messages: list | None = None) -> dict:
    ds = dataset(split)
    if not 0 <= row < len(ds):
        raise IndexError(f"row {row} of the {split} split: the environment has rows 0..{len(ds) - 1}")
    episode = Episode(ENV)
    episode.start(ds[row])
    kind, value = await episode.next_event()
    if kind != "ask":
        raise EpisodeError("the environment ended the episode before the model's first turn")
    prompt, tools = value
    messages = messages or []
    if not same_messages(messages, prompt[: len(messages)]):
        episode.cancel()
        raise ValueError(
            f"the task's prompt is not the prompt of row {row} ({split}) of the environment; "
            f"make the rows with `meshrl data verifiers`"
        )
    episode.seen = len(prompt)
    EPISODES[episode_id] = episode
    return {
        "observation": [to_plain(m) for m in prompt[len(messages) :]],
        "tools": [tool_spec(t) for t in tools],
        "info": {"verifiers_row": row, "split": split},
    }


async def step(
    episode_id: str, text: str, tool_calls: list | None = None, rejected: list | None = None, truncated: bool = False
) -> dict:
    """`rejected`: ids of calls meshrl refused and answered itself; the environment's answers
    to them stay out of the observation (the model would read two errors)."""
    episode = EPISODES.get(episode_id)
    if episode is None:
        raise KeyError(f"no open episode {episode_id!r}")
    episode.hidden = set(rejected or [])
    episode.answer(model_response(text, tool_calls or [], truncated))
    try:
        kind, value = await episode.next_event()
    except Exception:
        EPISODES.pop(episode_id, None)
        raise
    if kind == "ask":
        return asked(episode, value[0])
    EPISODES.pop(episode_id, None)
    return finished(episode, value)


def asked(episode: Episode, prompt: list) -> dict:
    """The environment's answer to the turn: the messages after the model's own."""
    if len(prompt) < episode.seen + 1:
        raise EpisodeError("the environment rewrote the conversation (a non-linear message sequence)")
    observation = [to_plain(m) for m in prompt[episode.seen + 1 :]]
    episode.seen = len(prompt)
    return {"observation": shown(observation, episode.hidden), "done": False}


def shown(observation: list, hidden: set) -> list:
    return [m for m in observation if m.get("tool_call_id") not in hidden]


def finished(episode: Episode, result: dict) -> dict:
    state = result["state"]
    conversation = list(state["prompt"]) + list(state.get("completion") or [])
    tail = [to_plain(m) for m in conversation[episode.seen + 1 :]]
    info = {
        "reward_details": result["details"],
        "reward_weights": result["weights"],
        "stop_condition": str(state.get("stop_condition") or ""),
    }
    return {
        "observation": shown([m for m in tail if m["role"] in ("user", "tool")], episode.hidden),
        "reward": result["reward"],
        "done": True,
        "info": info,
    }


def close(episode_id: str) -> dict:
    episode = EPISODES.pop(episode_id, None)
    if episode is not None:
        episode.cancel()
    return {}
