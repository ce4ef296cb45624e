"""`rollout.agent`: how the rollout runs a multi-turn episode (a task with an environment).

    rollout:
      agent:
        max_turns: 4                 # model turns per episode at most
        max_episode_tokens: 512      # response tokens of the whole episode (turns + observations)
        tool_parser: hermes          # the model's tool-call format (services/rollout/agent/parsers)
        max_observation_tokens: 256  # an observation's content is cut to this many tokens
        max_tool_calls: 4            # calls answered per turn; more are answered with an error
        policy_endpoint:             # an OpenAI-compatible /v1/chat/completions on each replica, for
          enabled: false             # environments that run their own agent (ResetResponse.drives_policy)
          port: 0                    # 0 = a free port; bound per MESHRL_BIND_HOST (loopback by default)
          model: policy              # the `model` name it answers to

Each turn also stops at `rollout.sampling.max_tokens` and the context at
`rollout.max_model_len`; an episode that reaches any limit ends as truncated. Used only for
tasks with an environment (`PromptTask.environment`); single-turn tasks ignore it.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from meshrl.config.algorithm import Strict
from meshrl.config.parts import check_name, tool_parsers

# Typo guards: agentic episodes run to tens of turns; past these an episode is a runaway loop
# (each turn is a generation and an environment call) rather than a task.
MAX_TURNS = 256
MAX_TOOL_CALLS = 64


class PolicyEndpointConfig(Strict):
    enabled: bool = False
    port: int = Field(0, ge=0, le=65535)
    model: str = Field("policy", min_length=1)


class AgentConfig(Strict):
    max_turns: int = Field(4, ge=1, le=MAX_TURNS)
    max_episode_tokens: int = Field(512, ge=1)
    tool_parser: str = "hermes"
    max_observation_tokens: int = Field(256, ge=1)
    max_tool_calls: int = Field(4, ge=1, le=MAX_TOOL_CALLS)
    policy_endpoint: PolicyEndpointConfig = PolicyEndpointConfig()

    @field_validator("tool_parser")
    @classmethod
    def _known_parser(cls, name: str) -> str:
        return check_name(
            "rollout.agent.tool_parser", name, tool_parsers(), "tool-call format", kind="tool-call format"
        )
