"""The rollout's multi-turn side, built from the run config (None when it has no `environment`).

    agent = await agent_rollout(cfg, engine, state=bus.state, metrics=handle)

An external environment (`environment.address`, "a:1,b:2" for several replicas) is called
at its fixed address(es) with `environment.tls`; a launched built-in with the run's own gRPC
TLS (MESHRL_GRPC_TLS_*, when launch.grpc_tls is on), its replicas found in the run KV (`replicas.py`), refreshed while `agent.background()`
runs (the caller's to run beside its work). With rollout.agent.policy_endpoint.enabled the
replica also serves the OpenAI-compatible policy endpoint (policy/). `await agent.aclose()`
closes the channels and that server.
"""

from __future__ import annotations

from meshrl.config import RunConfig
from meshrl.services.rollout.agent.chat_format import ChatFormat
from meshrl.services.rollout.agent.env_client import EnvClientSettings, EnvironmentClient
from meshrl.services.rollout.agent.episode import EpisodeContext, EpisodeLimits
from meshrl.services.rollout.agent.group import AgentRollout
from meshrl.services.rollout.agent.instruments import AgentEvents
from meshrl.services.rollout.agent.parsers import get_tool_parser
from meshrl.services.rollout.agent.policy.endpoint import PolicyEndpoint
from meshrl.services.rollout.agent.policy.http import start_policy_server
from meshrl.services.rollout.agent.replicas import KvReplicas


def client_settings(cfg: RunConfig) -> EnvClientSettings:
    env = cfg.environment
    return EnvClientSettings(
        addresses=env.addresses,
        timeout_s=env.timeout_s,
        tls=env.tls,
        mesh_tls=env.launched,
        token_env=env.token_env,
        token_file=env.token_file,
        who=f"environment {env.name!r}",
    )


async def agent_rollout(cfg: RunConfig, engine, *, state=None, metrics=None) -> AgentRollout | None:
    if cfg.environment is None:
        return None
    events = AgentEvents(metrics)
    settings, replicas = client_settings(cfg), None
    if not settings.addresses:  # a launched built-in: its replicas announce themselves in the run KV
        replicas = KvReplicas(state)
        await replicas.wait(cfg.environment.start_timeout_s)
    client = EnvironmentClient(settings, addresses=replicas, on_call=events.env_call)
    agent = cfg.rollout.agent
    chat = ChatFormat(engine.tokenizer, get_tool_parser(agent.tool_parser), agent.max_observation_tokens)
    limits = EpisodeLimits(
        max_turns=agent.max_turns,
        max_episode_tokens=agent.max_episode_tokens,
        max_tool_calls=agent.max_tool_calls,
        max_model_len=cfg.rollout.max_model_len,
    )
    policy, server = None, None
    if agent.policy_endpoint.enabled:
        policy = PolicyEndpoint(model=agent.policy_endpoint.model)
        server = await start_policy_server(policy, agent.policy_endpoint.port)
    return AgentRollout(
        EpisodeContext(engine, client, chat, limits, events, policy), replicas=replicas, policy_server=server
    )
