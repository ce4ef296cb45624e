"""The client of `EnvironmentService` (protos/meshrl/env/v1/env.proto): the rollout's side of an episode.

    client = EnvironmentClient(EnvClientSettings(addresses=("env:50070",), timeout_s=10))
    first, repaired = await client.reset(env_pb2.ResetRequest(episode_id="g-1/0", ...))
    answer, repaired = await client.step(env_pb2.StepRequest(episode_id="g-1/0", turn=0, ...))
    await client.close("g-1/0")        # always attempted; never raises

- **Channels** as for external reward services (`meshrl.transport.rpc.tls`): TLS or mutual
  TLS (`tls`; a launched built-in: the run's own certificates, `mesh_tls`), `authorization:
  Bearer` from `token_env` / `token_file` (never the config), fast reconnect, 64 MiB
  messages, a deadline on every call (`timeout_s` per attempt).
- **Replicas**: an episode lives on the replica that answered its Reset; every Step and the
  Close go there (an environment keeps the episode's state). Resets are spread round-robin
  over `addresses` (or the callable that lists the live ones).
- **Retries** only on UNAVAILABLE (not reachable, restarting) and RESOURCE_EXHAUSTED (too many
  episodes open there), `attempts` in all with full-jitter back-off; calls are idempotent
  per episode id and turn (the contract), so a retry never advances an episode twice. A
  Reset retried after RESOURCE_EXHAUSTED or UNAVAILABLE goes to the next replica.
- **Every other failure** — DEADLINE_EXCEEDED, NOT_FOUND (the episode is unknown there:
  never reset, or lost in a restart), INTERNAL, UNAUTHENTICATED, ..., and INVALID_ANSWER
  (bytes that are no protobuf of the answer's type) — raises `EpisodeFailed(episode,
  status, message)`; the group is then dropped with that reason.
- Answers with bad UTF-8 are repaired (`meshrl.env_sdk.wire.parse_answer`): each call returns
  (answer, repaired).
- `on_call(method, seconds, status)` after each attempt feeds the latency histogram.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import grpc
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from meshrl.api.env.v1 import env_pb2
from meshrl.config.external_calls import TlsConfig
from meshrl.env_sdk.wire import parse_answer
from meshrl.services.rollout.agent.failures import INVALID_ANSWER, EpisodeFailed, InvalidAnswer
from meshrl.transport.rpc import mesh_tls
from meshrl.transport.rpc.mesh_tls import channel_credentials
from meshrl.transport.rpc.tls import open_external_channel, read_token

log = logging.getLogger(__name__)
SERVICE = "/meshrl.env.v1.EnvironmentService/"
RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED})
METHODS = {
    "Reset": (env_pb2.ResetRequest, env_pb2.ResetResponse),
    "Step": (env_pb2.StepRequest, env_pb2.StepResponse),
    "Close": (env_pb2.CloseRequest, env_pb2.CloseResponse),
}


@dataclass(frozen=True)
class EnvClientSettings:
    addresses: tuple[str, ...] = ()
    timeout_s: float = 10.0
    attempts: int = 3
    initial_backoff_s: float = 0.1
    max_backoff_s: float = 2.0
    tls: TlsConfig | None = None  # an external service's TLS
    mesh_tls: bool = False  # a launched built-in: the run's own gRPC TLS (MESHRL_GRPC_TLS_*), if on
    token_env: str | None = None
    token_file: str | None = None
    who: str = "environment"  # names the settings' owner in errors


def _retryable(err: BaseException) -> bool:
    return isinstance(err, grpc.aio.AioRpcError) and err.code() in RETRYABLE


class EnvironmentClient:
    def __init__(
        self,
        settings: EnvClientSettings,
        *,
        addresses: Callable[[], Sequence[str]] | None = None,
        on_call: Callable[[str, float, str], None] = lambda method, seconds, status: None,
    ):
        self.settings, self.on_call = settings, on_call
        self.addresses = addresses or (lambda: settings.addresses)
        self.channels: dict[str, grpc.aio.Channel] = {}
        self.home: dict[str, str] = {}  # episode id → the replica that holds it
        self.resets = itertools.count()  # spreads Resets over the replicas

    # -- channels ------------------------------------------------------------------------
    def channel(self, address: str) -> grpc.aio.Channel:
        if address not in self.channels:
            s = self.settings
            creds, server_name = self.credentials()
            token = read_token(s.token_env, s.token_file, who=s.who)
            self.channels[address] = open_external_channel(
                address, credentials=creds, token=token, server_name=server_name
            )
        return self.channels[address]

    def credentials(self) -> tuple[grpc.ChannelCredentials | None, str | None]:
        s = self.settings
        if s.mesh_tls:
            return mesh_tls.client_credentials(), dict(mesh_tls.client_options()).get("grpc.ssl_target_name_override")
        if s.tls:
            return channel_credentials(s.tls.ca_file, s.tls.cert_file, s.tls.key_file, who=s.who), s.tls.server_name
        return None, None

    async def aclose(self) -> None:
        channels, self.channels = list(self.channels.values()), {}
        for channel in channels:
            await channel.close()

    async def _call(self, address: str, method: str, request):
        request_cls, response_cls = METHODS[method]
        rpc = self.channel(address).unary_unary(
            SERVICE + method,
            request_serializer=request_cls.SerializeToString,
            response_deserializer=parse_answer(response_cls),
        )
        began, status = time.perf_counter(), "OK"
        try:
            answer, detail = await rpc(request, timeout=self.settings.timeout_s)
            if answer is None:
                status = INVALID_ANSWER
                raise InvalidAnswer(f"answered {detail}")
            return answer, detail
        except grpc.aio.AioRpcError as err:
            status = err.code().name
            raise
        finally:
            self.on_call(method, time.perf_counter() - began, status)

    async def _retrying(self, episode: str, what: str, attempt_call):
        s = self.settings
        retrying = AsyncRetrying(
            stop=stop_after_attempt(s.attempts),
            reraise=True,
            retry=retry_if_exception(_retryable),
            wait=wait_random_exponential(multiplier=s.initial_backoff_s, max=s.max_backoff_s),
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await attempt_call(attempt.retry_state.attempt_number - 1)
        except grpc.aio.AioRpcError as err:
            raise EpisodeFailed(episode, err.code().name, self._describe(what, err)) from None
        except InvalidAnswer as err:
            raise EpisodeFailed(episode, INVALID_ANSWER, f"{what}: {err}") from None

    def _describe(self, what: str, err: grpc.aio.AioRpcError) -> str:
        if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            return f"{what} got no answer within {self.settings.timeout_s:g} s (environment.timeout_s)"
        return f"{what}: {err.details() or 'no details'}"

    # -- the three calls -------------------------------------------------------------------
    async def reset(self, request: env_pb2.ResetRequest):
        episode = request.episode_id
        start = next(self.resets)

        async def attempt(n: int):
            live = list(self.addresses())
            if not live:
                raise EpisodeFailed(episode, "UNAVAILABLE", "no environment replica is known (environment.address)")
            address = live[(start + n) % len(live)]  # a retry goes to the next replica
            # Home before the call: a Reset cancelled in flight may still have opened the
            # episode there, and its Close must go there (closing an unknown id succeeds).
            self.home[episode] = address
            return await self._call(address, "Reset", request)

        return await self._retrying(episode, "Reset", attempt)

    async def step(self, request: env_pb2.StepRequest):
        episode = request.episode_id
        address = self.home.get(episode)
        if address is None:
            raise EpisodeFailed(episode, "FAILED_PRECONDITION", "Step before a successful Reset")
        return await self._retrying(
            episode, f"Step (turn {request.turn}) at {address}", lambda n: self._call(address, "Step", request)
        )

    async def close(self, episode: str) -> None:
        """Forget the episode here and tell its replica; a failure is logged, never raised."""
        address = self.home.pop(episode, None)
        if address is None:
            return
        try:
            await self._call(address, "Close", env_pb2.CloseRequest(episode_id=episode))
        except grpc.aio.AioRpcError as err:
            log.warning("Close of episode %s at %s failed: %s %s", episode, address, err.code().name, err.details())
        except InvalidAnswer as err:
            log.warning("Close of episode %s: %s", episode, err)
