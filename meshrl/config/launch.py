"""How the local launcher keeps a run's services alive, as typed config (`RunConfig.launch`).

    launch:
      restart_budget: 5          # restarts of one service allowed within restart_window_s
      restart_window_s: 600
      backoff_initial_s: 1.0     # wait before the 1st restart; doubles for each quick crash
      backoff_max_s: 60.0        # ... capped here
      backoff_reset_s: 120.0     # a service that ran this long starts its back-off over
      cores: auto                # shared | split | auto (meshrl/launch/cores.py)
      rollout_cores: null        # split only: how many cores vLLM gets (null = half); the learner the rest
      grpc_tls: mutual           # off | on | mutual: the mesh's gRPC over TLS (meshrl/launch/secrets.py)

Kubernetes' restartPolicy Always + CrashLoopBackOff on one machine: a dead service is
restarted after 1 s, 2 s, 4 s, ... (capped); the run stops only when one service needs more
than `restart_budget` restarts within `restart_window_s`. `restart_budget: 0` = no restarts
(any dead service stops the run). Never imports torch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from meshrl.config.algorithm import Strict


def yaml_switch(value):
    """YAML reads a bare `off` / `on` (in a file or a key=value override) as a boolean: the word again."""
    return {False: "off", True: "on"}.get(value, value) if isinstance(value, bool) else value


class LaunchConfig(Strict):
    restart_budget: int = Field(5, ge=0)
    restart_window_s: float = Field(600.0, gt=0.0)
    backoff_initial_s: float = Field(1.0, ge=0.0)
    backoff_max_s: float = Field(60.0, ge=0.0)
    backoff_reset_s: float = Field(120.0, gt=0.0)
    # Which cores rollout and learner compute on: all each (shared), disjoint halves (split),
    # auto = shared (the faster one on a small host, asynchronous runs included: meshrl/launch/cores.py).
    cores: Literal["auto", "shared", "split"] = "auto"
    # With `split`: the rollout's share of the usable cores (None = half); checked against the
    # host's cores before anything starts (meshrl/launch/model_settings.py), since only then are they known.
    rollout_cores: int | None = Field(None, ge=1)
    # The mesh's own gRPC (learner→reference, eval→rollout, control, health): "on" serves TLS
    # with a run CA the launcher makes in RUN_DIR/secrets; "mutual" (the default) also requires
    # each caller's certificate and authorises each method by the caller's kind
    # (meshrl/transport/rpc/authz.py: a rollout may not pause the learner). Off: plaintext on
    # loopback (any local user can call every method), or a cluster's own MESHRL_GRPC_TLS_* env.
    grpc_tls: Literal["off", "on", "mutual"] = "mutual"

    @field_validator("grpc_tls", mode="before")
    @classmethod
    def _yaml_booleans(cls, value):
        return yaml_switch(value)

    @model_validator(mode="after")
    def _rollout_cores_only_when_split(self) -> "LaunchConfig":
        if self.rollout_cores is not None and self.cores != "split":
            raise ValueError(
                f"launch.rollout_cores={self.rollout_cores} splits the cores, but launch.cores={self.cores}; "
                f"set launch.cores=split or drop launch.rollout_cores"
            )
        return self

    @model_validator(mode="after")
    def _cap_above_start(self) -> "LaunchConfig":
        if self.backoff_max_s < self.backoff_initial_s:
            raise ValueError(
                f"launch.backoff_max_s={self.backoff_max_s} is below "
                f"launch.backoff_initial_s={self.backoff_initial_s}: the cap must "
                f"be at least the first wait"
            )
        return self
