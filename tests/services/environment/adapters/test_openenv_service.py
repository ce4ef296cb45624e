"""The OpenEnv adapter as a service: meshrl's environment service (the mesh's process contract,
real NATS, a real gRPC port) serving `environment.openenv` against a real OpenEnv server built
with OpenEnv's own classes (openenv_guess_server.py, in the openenv adapter venv). Episodes are
played over env.proto with hand-computed rewards; the server's faults (down at start, dying
mid-episode, malformed JSON, never answering, never ending) each give the status the rollout
drops the group on, and the service goes on.

Run: .venv/bin/python -m pytest -q tests/services/environment/adapters/test_openenv_service.py
"""

import asyncio
import contextlib
import json
import signal
import subprocess
import sys

import grpc
import pytest

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from tests.fixtures.adapters import adapter_python
from tests.fixtures.run_config import write_config
from tests.services.environment.adapters.openenv_servers import environment_service, guess_server
from tests.services.environment.test_environment_process import announced

CALL_S = 30
CLI = [sys.executable, "-m", "meshrl.cli.main"]


@pytest.fixture(scope="module")
def openenv_python() -> str:
    return adapter_python("openenv")


@pytest.fixture(scope="module")
def guess_url(openenv_python):
    with guess_server(openenv_python) as (_, url):
        yield url


@contextlib.asynccontextmanager
async def served_adapter(tmp_path, nats_url, run_id, bus, openenv: dict, env: dict | None = None):
    """The address of the environment service serving `openenv` as environment `guess`."""
    config = write_config(tmp_path, environment={"name": "guess", "openenv": openenv})
    proc = environment_service(nats_url, run_id, config, env=env)
    try:
        addresses = await announced(bus, proc, within_s=120)
        assert addresses, proc.communicate()[0][-3000:]
        yield addresses[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.to_thread(proc.communicate, timeout=60)
    assert proc.returncode == 0, out[-3000:]


@contextlib.asynccontextmanager
async def adapter(tmp_path, nats_url, run_id, bus, openenv: dict):
    async with served_adapter(tmp_path, nats_url, run_id, bus, openenv) as address:
        async with grpc.aio.insecure_channel(address) as channel:
            yield env_pb2_grpc.EnvironmentServiceStub(channel)


async def reset(stub, episode_id: str, seed: int = 0) -> env_pb2.ResetResponse:
    request = env_pb2.ResetRequest(episode_id=episode_id, environment="guess", seed=seed)
    return await stub.Reset(request, timeout=CALL_S)


async def step(stub, episode_id: str, turn: int, text: str) -> env_pb2.StepResponse:
    return await stub.Step(env_pb2.StepRequest(episode_id=episode_id, turn=turn, text=text), timeout=CALL_S)


async def test_an_episode_plays_on_the_openenv_server_with_its_rewards(tmp_path, nats_url, run_id, bus, guess_url):
    async with adapter(tmp_path, nats_url, run_id, bus, {"url": guess_url, "observation_field": "prompt"}) as stub:
        first = await reset(stub, "g/0", seed=4)  # target 4 % 10 + 1 = 5
        turns = [await step(stub, "g/0", t, text) for t, text in enumerate(["I guess 3", "then 9", "It is 5"])]
        again = await step(stub, "g/0", 2, "It is 5")  # a retry: the same answer, not a fourth guess
        with pytest.raises(grpc.aio.AioRpcError) as after_done:
            await step(stub, "g/0", 3, "5")
        await stub.Close(env_pb2.CloseRequest(episode_id="g/0"), timeout=CALL_S)
    assert [(m.role, m.content) for m in first.observation] == [("user", "Guess my number, from 1 to 10.")]
    assert [t.observation[0].content for t in turns] == ["higher", "lower", "right"]
    # two wrong guesses before the right one: 1.0 - 0.25 * 2; the episode's reward is the sum of turns'
    assert [t.reward for t in turns] == [0.0, 0.0, 0.5] and sum(t.reward for t in turns) == 0.5
    assert [t.done for t in turns] == [False, False, True] and again == turns[2]
    assert json.loads(turns[0].info_json) == {"guess": 3} and json.loads(first.info_json) == {"episode_id": "g/0"}
    assert after_done.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_episodes_at_once_keep_their_own_state_and_seeds(tmp_path, nats_url, run_id, bus, guess_url):
    async with adapter(tmp_path, nats_url, run_id, bus, {"url": guess_url}) as stub:
        seeds = {f"g/{i}": seed for i, seed in enumerate([0, 1, 12, 9])}  # targets 7 (unseeded), 2, 3, 10
        firsts = await asyncio.gather(*(reset(stub, e, s) for e, s in seeds.items()))
        wrong = await asyncio.gather(*(step(stub, e, 0, "guess 1") for e in seeds))
        right = await asyncio.gather(*(step(stub, e, 1, str(t)) for e, t in zip(seeds, [7, 2, 3, 10])))
    # no observation_field: the whole observation less its metadata, as JSON
    assert all(json.loads(f.observation[0].content) == {"prompt": "Guess my number, from 1 to 10."} for f in firsts)
    assert [json.loads(w.observation[0].content)["prompt"] for w in wrong] == ["higher"] * 4
    assert [(r.reward, r.done) for r in right] == [(0.75, True)] * 4


async def test_with_action_tool_the_servers_action_is_a_tool_and_a_call_its_action(
    tmp_path, nats_url, run_id, bus, guess_url
):
    def guess(call_id: str, arguments: dict) -> env_pb2.ToolCall:
        return env_pb2.ToolCall(id=call_id, name="guess", arguments_json=json.dumps(arguments))

    block = {"url": guess_url, "observation_field": "prompt", "action_tool": "guess"}
    async with adapter(tmp_path, nats_url, run_id, bus, block) as stub:
        first = await reset(stub, "g/0", seed=4)  # target 5
        turns = [await step(stub, "g/0", 0, "5")]  # no call: told to call the tool
        for t, calls in enumerate([[guess("a", {"message": "3"})], [guess("b", {"msg": "5"})]], start=1):
            turns.append(
                await stub.Step(env_pb2.StepRequest(episode_id="g/0", turn=t, tool_calls=calls), timeout=CALL_S)
            )
        calls = [guess("c", {"message": "5"}), guess("d", {"message": "6"})]
        turns.append(await stub.Step(env_pb2.StepRequest(episode_id="g/0", turn=3, tool_calls=calls), timeout=CALL_S))
    [tool] = first.tools
    schema = {
        "type": "object",
        "properties": {"message": {"title": "Message", "type": "string"}},
        "required": ["message"],
    }
    assert tool.name == "guess" and json.loads(tool.parameters_json) == schema
    assert turns[0].observation[0].role == "user" and "act by calling the guess tool" in turns[0].observation[0].content
    assert [(m.role, m.tool_call_id, m.content) for m in turns[1].observation] == [("tool", "a", "higher")]
    assert "VALIDATION_ERROR" in turns[2].observation[0].content and not turns[2].done  # the model may correct it
    assert [(m.tool_call_id, m.content[:20]) for m in turns[3].observation] == [
        ("c", "right"),
        ("d", "error: one action pe"),
    ]
    # one wrong guess before the right one (the refused call was no guess): 1.0 - 0.25
    assert [t.reward for t in turns[1:]] == [0.0, 0.0, 0.75] and turns[3].done
    assert not turns[0].HasField("reward") and not turns[2].HasField("reward")


async def test_an_action_the_server_refuses_is_invalid_argument_with_its_reason(
    tmp_path, nats_url, run_id, bus, guess_url
):
    async with adapter(tmp_path, nats_url, run_id, bus, {"url": guess_url, "action_field": "guess"}) as stub:
        await reset(stub, "g/0")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await step(stub, "g/0", 0, "5")
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "refused step: VALIDATION_ERROR" in refused.value.details() and "message" in refused.value.details()


async def test_an_episode_that_never_ends_stays_open_turn_after_turn(tmp_path, nats_url, run_id, bus, guess_url):
    """meshrl's rollout.agent.max_turns ends such an episode (truncated); the adapter keeps answering."""
    block = {"url": guess_url, "observation_field": "prompt", "reset": {"behaviour": "endless"}}
    async with adapter(tmp_path, nats_url, run_id, bus, block) as stub:
        await reset(stub, "g/0", seed=4)
        turns = [await step(stub, "g/0", t, "5") for t in range(8)]
        await stub.Close(env_pb2.CloseRequest(episode_id="g/0"), timeout=CALL_S)
    assert [(t.observation[0].content, t.reward, t.done) for t in turns] == [("again", 0.0, False)] * 8


async def test_a_server_that_never_answers_is_deadline_exceeded_and_the_service_goes_on(
    tmp_path, nats_url, run_id, bus, guess_url
):
    block = {"url": guess_url, "observation_field": "prompt", "timeout_s": 1.0, "reset": {"behaviour": "hang"}}
    async with adapter(tmp_path, nats_url, run_id, bus, block) as stub:
        await reset(stub, "g/0")
        with pytest.raises(grpc.aio.AioRpcError) as hung:
            await step(stub, "g/0", 0, "5")
        later = await reset(stub, "g/1")  # the next episode is served
    assert (
        hung.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        and "did not answer step within 1 s" in hung.value.details()
    )
    assert later.observation[0].content == "Guess my number, from 1 to 10."


async def test_a_server_dying_mid_episode_is_unavailable_and_the_service_goes_on(
    tmp_path, nats_url, run_id, bus, openenv_python
):
    with guess_server(openenv_python) as (server, url):
        block = {"url": url, "observation_field": "prompt", "reset": {"behaviour": "die"}}
        async with adapter(tmp_path, nats_url, run_id, bus, block) as stub:
            await reset(stub, "g/0", seed=4)
            first = await step(stub, "g/0", 0, "3")
            with pytest.raises(grpc.aio.AioRpcError) as died:
                await step(stub, "g/0", 1, "5")  # the server exits here
            await asyncio.to_thread(server.wait, 30)
            with pytest.raises(grpc.aio.AioRpcError) as gone:
                await reset(stub, "g/1")
    assert first.observation[0].content == "higher"
    assert died.value.code() == grpc.StatusCode.UNAVAILABLE and "closed the session at step" in died.value.details()
    assert gone.value.code() == grpc.StatusCode.UNAVAILABLE and "cannot be reached" in gone.value.details()


async def test_malformed_json_from_the_server_is_internal_naming_it(tmp_path, nats_url, run_id, bus, openenv_python):
    with guess_server(openenv_python, malformed=True) as (_, url):
        async with adapter(tmp_path, nats_url, run_id, bus, {"url": url}) as stub:
            with pytest.raises(grpc.aio.AioRpcError) as bad:
                await reset(stub, "g/0")
    assert bad.value.code() == grpc.StatusCode.INTERNAL
    assert "answered reset with malformed JSON" in bad.value.details() and "{this is not json" in bad.value.details()


async def test_meshrl_env_check_passes_against_the_adapter_with_a_token(tmp_path, nats_url, run_id, bus, guess_url):
    token_file = tmp_path / "env-token"
    token_file.write_text("s3cret-token-for-the-kit")
    block = {"url": guess_url, "observation_field": "prompt"}
    async with served_adapter(
        tmp_path, nats_url, run_id, bus, block, {"MESHRL_ENV_TOKEN_FILE": str(token_file)}
    ) as address:
        kit = [
            *CLI,
            "env",
            "check",
            address,
            "--environment",
            "guess",
            "--token-file",
            str(token_file),
            "--timeout",
            "20",
        ]
        done = await asyncio.to_thread(subprocess.run, kit, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no token → UNAUTHENTICATED" in done.stdout and "checks passed" in done.stdout, done.stdout


def test_a_server_down_at_start_exits_2_with_one_line(tmp_path, nats_url, run_id):
    config = write_config(tmp_path, environment={"name": "guess", "openenv": {"url": "http://127.0.0.1:9"}})
    proc = environment_service(nats_url, run_id, config)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2, out
    assert "environment.openenv.url='http://127.0.0.1:9': the OpenEnv server is not there" in out
