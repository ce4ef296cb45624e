"""The learned reward model: a Hugging Face sequence-classification model as a reward component.

    reward_model:
      path: ~/.cache/meshrl/models/MY-RM   # a model dir with a num_labels: 1 head
      replicas: 1                          # `meshrl scale RUN_DIR reward_model=N` changes it
      normalize: running                   # running mean/std over the scores seen; or none
      clip: 5.0                            # bound |reward| after normalising
    reward:
      components:
        - {name: rm, kind: reward_model, weight: 0.5, on_failure: {value: 0.0}}
        - {name: correct, kind: math_verify, weight: 1.0}

A `kind: reward_model` component is called like `kind: external` (timeout_s, batch_size,
retry, breaker... apply) at the address of the reward-model service
(services/reward_model). With no `address` on the component, `meshrl train` starts that
service itself, `reward_model.replicas` times, every replica on `reward_model.grpc_port`
(0 = a free port the launcher picks and writes into RUN_DIR/config.yaml). With an
`address` (a cluster: deploy/compose, deploy/k8s) the service runs elsewhere and the
launcher starts none. With `launch.grpc_tls`, the launched replicas serve the run's TLS
and the reward service calls them with its own certificate (mesh_tls).

Simplification: one reward model per run (one `kind: reward_model` component).
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, field_validator

from meshrl.config.algorithm import Strict
from meshrl.config.external_calls import (
    MESH_TLS_CA_ENV as CA_ENV,
)
from meshrl.config.external_calls import (
    MESH_TLS_CERT_ENV as CERT_ENV,
)
from meshrl.config.external_calls import (
    MESH_TLS_KEY_ENV as KEY_ENV,
)
from meshrl.config.external_calls import (
    TlsConfig,
)
from meshrl.config.parts import REWARD_MODEL_KIND
from meshrl.config.values import MAX_REPLICAS
from meshrl.errors import ConfigError

LOCAL_HOST = "127.0.0.1"


class RewardModelConfig(Strict):
    """How the reward-model service loads, batches and normalises (services/reward_model)."""

    path: str
    replicas: int = Field(1, ge=1, le=MAX_REPLICAS)
    grpc_port: int = Field(0, ge=0, le=65535)  # every replica serves here (SO_REUSEPORT)
    batch_size: int = Field(32, ge=1)  # texts per forward pass
    max_length: int = Field(512, ge=8)  # tokens per text, truncated beyond
    device: str = "auto"  # auto (the GPU when torch sees one), cpu, cuda, cuda:1
    normalize: Literal["none", "running"] = "none"
    clip: float | None = Field(None, gt=0.0)
    # How long the reward service waits at start for the model to load and answer health.
    start_timeout_s: float = Field(300.0, gt=0.0)

    @field_validator("path")
    @classmethod
    def _expand_home(cls, value: str) -> str:
        return os.path.expanduser(value)


def reward_model_component(cfg):
    """The run's `kind: reward_model` component, or None."""
    return next((c for c in cfg.reward.components if c.kind == REWARD_MODEL_KIND), None)


def launches_reward_model(cfg) -> bool:
    """True when `meshrl train` starts the reward-model service (no address given)."""
    component = reward_model_component(cfg)
    return component is not None and component.address is None and not cfg.algorithm.offline


def reward_model_address(cfg) -> str:
    """Where the reward service calls the reward model: the component's address, else the
    launcher's local replicas on reward_model.grpc_port."""
    component = reward_model_component(cfg)
    return component.address or f"{LOCAL_HOST}:{cfg.reward_model.grpc_port}"


def reward_model_problems(cfg) -> list[str]:
    """Keys that must agree with the `reward_model` section, each problem naming them."""
    names = [c.name for c in cfg.reward.components if c.kind == REWARD_MODEL_KIND]
    if len(names) > 1:
        return [f"reward.components {names} all have kind: reward_model; a run has one reward model: keep one of them"]
    if names and cfg.reward_model is None:
        return [
            f"reward component {names[0]!r} has kind: reward_model but the config has no "
            f"reward_model section: add `reward_model: {{path: DIR}}` (a sequence-classification "
            f"model dir with num_labels: 1)"
        ]
    if not names and cfg.reward_model is not None:
        return [
            "reward_model is set but no reward component uses it: add "
            "`{name: rm, kind: reward_model, weight: 1.0}` to reward.components, or remove reward_model"
        ]
    return []


def called_components(cfg) -> list:
    """reward.components as the reward service calls them: a `kind: reward_model` one becomes
    `kind: external` at reward_model_address (a ConfigError when there is none to call)."""
    component = reward_model_component(cfg)
    if component is None:
        return list(cfg.reward.components)
    if component.address is None and cfg.reward_model.grpc_port == 0:
        raise ConfigError(
            f"reward component {component.name!r} (kind reward_model) has no address and "
            f"reward_model.grpc_port is 0: `meshrl train` picks the port; elsewhere set "
            f"the component's address (host:port of the reward-model service)"
        )
    update = {"kind": "external", "address": reward_model_address(cfg)}
    if component.address is None and cfg.launch.grpc_tls != "off" and component.tls is None:
        update["tls"] = mesh_tls()
    called = component.model_copy(update=update)
    return [called if c is component else c for c in cfg.reward.components]


def mesh_tls():
    """With launch.grpc_tls, the launched reward model serves TLS with the run's CA: the reward
    service calls it with its own mesh certificate (MESHRL_GRPC_TLS_*, set by the launcher)."""
    if not os.environ.get(CA_ENV):
        raise ConfigError(
            f"launch.grpc_tls is on but {CA_ENV} is not set: the reward service calls the "
            f"reward model over the run's TLS; start the run with `meshrl train`"
        )
    return TlsConfig(ca_file=os.environ[CA_ENV], cert_file=os.environ.get(CERT_ENV), key_file=os.environ.get(KEY_ENV))


def start_waits(cfg) -> dict[str, float]:
    """Component name → seconds the reward service waits for it at start (the reward model
    may still be loading; other externals keep the default)."""
    component = reward_model_component(cfg)
    return {component.name: cfg.reward_model.start_timeout_s} if component and cfg.reward_model else {}
