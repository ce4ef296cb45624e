"""The textarena adapter as a service: meshrl's environment service (the mesh's process
contract, real NATS, a real gRPC port) playing textarena's GuessTheNumber-v0 (textarena 0.7.4,
its own venv: deploy/adapters/textarena.txt) in a library worker child. Games are played over
env.proto with the game's rewards computed by hand; a game that is not there or needs two
players stops the service at start (exit 2, one line); a child killed mid-game loses its games
(NOT_FOUND) and the next Reset starts a new one.

Run: .venv/bin/python -m pytest -q tests/services/environment/adapters/test_textarena_service.py
"""

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys

import grpc
import psutil
import pytest

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from meshrl.cli.doctor.checks_environment import _check_textarena
from meshrl.config.load import load_config
from meshrl.errors import LaunchError
from meshrl.launch.environment import check_environment_up
from tests.fixtures.adapters import adapter_python
from tests.fixtures.run_config import write_config
from tests.services.environment.adapters.openenv_servers import environment_service
from tests.services.environment.test_environment_process import announced

CALL_S = 60
SEED = 5


def target(seed: int) -> int:
    """GuessTheNumber's number: textarena seeds Python's random at reset, then draws randint(1, 20)."""
    random.seed(seed)
    return random.randint(1, 20)


@pytest.fixture(scope="module")
def textarena_python() -> str:
    return adapter_python("textarena")


@contextlib.asynccontextmanager
async def adapter(tmp_path, nats_url, run_id, bus, block: dict):
    """(a stub on the service playing `block` as environment `guess`, the service process)."""
    config = write_config(tmp_path, environment={"name": "guess", "textarena": block})
    proc = environment_service(nats_url, run_id, config)
    try:
        addresses = await announced(bus, proc, within_s=180)
        assert addresses, proc.communicate()[0][-3000:]
        async with grpc.aio.insecure_channel(addresses[0]) as channel:
            yield env_pb2_grpc.EnvironmentServiceStub(channel), proc
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.to_thread(proc.communicate, timeout=60)
    assert proc.returncode == 0, out[-3000:]


async def play(stub, episode_id: str, guesses: list[str], seed: int = SEED):
    first = await stub.Reset(
        env_pb2.ResetRequest(episode_id=episode_id, environment="guess", seed=seed), timeout=CALL_S
    )
    turns = []
    for t, text in enumerate(guesses):
        turns.append(await stub.Step(env_pb2.StepRequest(episode_id=episode_id, turn=t, text=text), timeout=CALL_S))
    await stub.Close(env_pb2.CloseRequest(episode_id=episode_id), timeout=CALL_S)
    return first, turns


async def test_games_play_with_the_games_own_rewards(tmp_path, nats_url, run_id, bus, textarena_python):
    n = target(SEED)
    block = {"game": "GuessTheNumber-v0", "args": {"max_turns": 3}, "python": textarena_python}
    async with adapter(tmp_path, nats_url, run_id, bus, block) as (stub, _):
        first, won = await play(stub, "g/0", [f"I say [{n - 3}]", f"so [{n}]"])
        _, out_of_turns = await play(stub, "g/1", [f"[{n - 10}]", f"[{n - 5}]", f"[{n - 1}]", f"[{n - 2}]"])
        _, invalid = await play(stub, "g/2", ["no number", "still none"])
    assert "Guess The Number" in first.observation[0].content and "within 3 turns" in first.observation[0].content
    assert won[0].observation[0].content == f"The target number is {'higher' if n - 3 < n else 'lower'}."
    assert not won[0].HasField("reward") and not won[0].done
    assert won[1].done and won[1].reward == 1.0 and json.loads(won[1].info_json)["invalid_move"] is False
    # textarena's max_turns=3 takes a fourth guess; then the reward is 1 - |last - n| / (20 - 1)
    assert [t.done for t in out_of_turns] == [False, False, False, True]
    assert out_of_turns[-1].reward == pytest.approx(1 - 2 / 19)
    # one invalid move is forgiven (a message the model reads), the second ends the game at 0.0
    assert "invalid move" in invalid[0].observation[0].content and not invalid[0].done
    assert invalid[1].done and invalid[1].reward == 0.0 and json.loads(invalid[1].info_json)["invalid_move"] is True


async def test_a_killed_child_loses_its_games_and_the_next_reset_plays(
    tmp_path, nats_url, run_id, bus, textarena_python
):
    block = {"game": "GuessTheNumber-v0", "python": textarena_python}
    async with adapter(tmp_path, nats_url, run_id, bus, block) as (stub, proc):
        await stub.Reset(env_pb2.ResetRequest(episode_id="g/0", environment="guess", seed=SEED), timeout=CALL_S)
        [child] = [c for c in psutil.Process(proc.pid).children() if "child.py" in " ".join(c.cmdline())]
        os.kill(child.pid, signal.SIGKILL)
        await asyncio.to_thread(child.wait, 30)
        with pytest.raises(grpc.aio.AioRpcError) as lost:
            await stub.Step(env_pb2.StepRequest(episode_id="g/0", turn=0, text="[1]"), timeout=CALL_S)
        _, turns = await play(stub, "g/1", [f"[{target(SEED)}]"])
    assert lost.value.code() == grpc.StatusCode.NOT_FOUND and "worker holding this episode died" in lost.value.details()
    assert turns[0].done and turns[0].reward == 1.0


async def test_meshrl_env_check_passes_against_the_adapter(tmp_path, nats_url, run_id, bus, textarena_python):
    block = {"game": "GuessTheNumber-v0", "python": textarena_python}
    async with adapter(tmp_path, nats_url, run_id, bus, block) as (stub, proc):
        address = (await announced(bus, proc))[0]
        kit = [
            sys.executable,
            "-m",
            "meshrl.cli.main",
            "env",
            "check",
            address,
            "--environment",
            "guess",
            "--timeout",
            "30",
        ]
        done = await asyncio.to_thread(subprocess.run, kit, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "checks passed" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize(
    "game, says",
    [("TicTacToe-v0", "cannot be played by one player"), ("guessthenumber", "registered: GuessTheNumber-v0")],
)
def test_a_game_it_cannot_play_exits_2_with_one_line(tmp_path, nats_url, run_id, textarena_python, game, says):
    config = write_config(
        tmp_path, environment={"name": "guess", "textarena": {"game": game, "python": textarena_python}}
    )
    proc = environment_service(nats_url, run_id, config)
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 2 and f"environment.textarena (game {game!r})" in out and says in out, out


def test_meshrl_train_and_doctor_refuse_a_game_it_cannot_play_before_anything_starts(textarena_python):
    base = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}
    block = {"game": "TicTacToe-v0", "python": textarena_python}
    cfg = load_config(base={**base, "environment": {"name": "ttt", "textarena": block}})
    with pytest.raises(
        LaunchError, match=r"environment 'ttt': environment.textarena \(game 'TicTacToe-v0'\): .*one player"
    ):
        check_environment_up(cfg)
    good = load_config(base={**base, "environment": {"name": "g", "textarena": {**block, "game": "GuessTheNumber-v0"}}})
    check_environment_up(good)  # no error: the game is made for one player
    assert _check_textarena(cfg.environment).status == "fail" and _check_textarena(good.environment).status == "pass"


async def test_a_groups_episodes_play_the_groups_game(tmp_path, nats_url, run_id, bus, textarena_python):
    """Episodes of one group carry their own seeds and the group's group_seed: each plays the
    group's number (so GRPO compares rewards on one task), won by guessing target(group_seed)."""
    block = {"game": "GuessTheNumber-v0", "python": textarena_python}
    n, episodes = target(SEED), [("g/0", 11), ("g/1", 12), ("g/2", 13)]
    assert len({target(seed) for _, seed in episodes} | {n}) > 1  # the episodes' own seeds would differ
    async with adapter(tmp_path, nats_url, run_id, bus, block) as (stub, _):
        won = []
        for episode_id, seed in episodes:
            request = env_pb2.ResetRequest(episode_id=episode_id, environment="guess", seed=seed, group_seed=SEED)
            await stub.Reset(request, timeout=CALL_S)
            answer = await stub.Step(env_pb2.StepRequest(episode_id=episode_id, turn=0, text=f"[{n}]"), timeout=CALL_S)
            won.append((answer.done, answer.reward))
    assert won == [(True, 1.0)] * 3
