"""Does the environment at `environment.address` serve the run config's `environment.name`?

Health says SERVING whatever name a run will ask for, so a server that serves `Mul` while the
config says `mulenv` let a run start, and every group it sampled was then dropped "not served
here" (an outside trial: 64 groups, then the run stopped). The launcher asks once, before any
service starts, with one Reset under that name (closed again should it open): the SDK's answer
to a name it does not serve lists the names it does (meshrl.env_sdk.not_served). A server
that answers otherwise is not judged here: the run's own first episodes are.

    problem = await name_problem(env, "127.0.0.1:50081", timeout_s=5)   # None: served
"""

from __future__ import annotations

import contextlib
import uuid

import grpc

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from meshrl.config.secrets import read_secret
from meshrl.env_sdk.not_served import served_names_in
from meshrl.errors import LaunchError
from meshrl.transport.rpc.mesh_tls import channel_credentials
from meshrl.transport.rpc.tls import open_external_channel


def bearer_token(env) -> str | None:
    """The config's token for the environment (environment.token_env / token_file), if any."""
    return read_secret(
        env_name=env.token_env,
        file=env.token_file,
        env_label="environment.token_env",
        file_label="environment.token_file",
    )


def probe_request(name: str) -> env_pb2.ResetRequest:
    return env_pb2.ResetRequest(
        environment=name,
        episode_id=f"meshrl-name-check-{uuid.uuid4().hex[:12]}",
        prompt_messages=[env_pb2.ChatMessage(role="user", content="meshrl asks whether this name is served")],
        seed=1,
        group_seed=1,
    )


async def reset_error(env, address: str, timeout_s: float) -> grpc.aio.AioRpcError | None:
    """The error one Reset under environment.name met at `address`; None when it was answered
    (that episode is closed again). Also `meshrl doctor`'s question (cli/env_check/config_name.py)."""
    tls = env.tls
    credentials = (
        channel_credentials(tls.ca_file, tls.cert_file, tls.key_file, who=f"environment {env.name!r}") if tls else None
    )
    request = probe_request(env.name)
    async with open_external_channel(
        address, credentials=credentials, token=bearer_token(env), server_name=tls.server_name if tls else None
    ) as channel:
        stub = env_pb2_grpc.EnvironmentServiceStub(channel)
        try:
            await stub.Reset(request, timeout=timeout_s)
        except grpc.aio.AioRpcError as err:
            return err
        with contextlib.suppress(grpc.aio.AioRpcError):  # it is gone with its idle expiry anyway
            await stub.Close(env_pb2.CloseRequest(episode_id=request.episode_id), timeout=timeout_s)
    return None


def served_instead(err: grpc.aio.AioRpcError | None) -> list[str] | None:
    """The names the server serves, when `err` is the SDK's "not served here"; else None."""
    if err is None or err.code() != grpc.StatusCode.INVALID_ARGUMENT:
        return None
    named = served_names_in(err.details() or "")
    return named[1] if named else None


async def name_problem(env, address: str, timeout_s: float) -> str | None:
    """One line naming both names and the fix when the server says it serves others; else None."""
    served = served_instead(await reset_error(env, address, timeout_s))
    return None if served is None else mismatch(env.name, address, served)


async def check_names_served(env, timeout_s: float = 5.0) -> None:
    """LaunchError naming the fix at the first address whose server serves other names."""
    for address in env.addresses:
        if problem := await name_problem(env, address, timeout_s):
            raise LaunchError(problem)


def mismatch(name: str, address: str, served: list[str]) -> str:
    names = " or ".join(repr(s) for s in served)
    return (
        f"environment.name is {name!r} but the environment at {address} serves {names}: set environment.name "
        f"to {names}, or serve it under {name!r} (meshrl.env_sdk: serve({{{name!r}: YourClass}}, ...); a class "
        f"alone is served under its class name)"
    )
