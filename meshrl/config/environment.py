"""The run's environment: where multi-turn tasks' episodes run (docs/environments.md).

    environment:
      name: tool_arith          # sent as PromptTask.environment and ResetRequest.environment
      builtin: tool_arith       # a built-in environment (services/environment), and/or
      address: ""               # host:port where the environment service runs (none launched)
      replicas: 1               # launched replicas (`meshrl scale RUN env=N`)
      timeout_s: 10             # deadline of each Reset/Step/Close call
      token_env: ""             # bearer token: the NAME of an env var, or token_file: PATH
      tls: {ca_file: ..., cert_file: ..., key_file: ...}   # TLS to an external service

Absent: every task is single-turn (today's behaviour). With `builtin` and no `address`,
`meshrl train` starts `environment.replicas` replicas of the environment service (each on its own port: an
episode lives on the replica that reset it, so the rollout calls each replica by its own
address, announced under the run KV key `services.environment.<replica>`); with
`launch.grpc_tls` they serve the run's TLS and the rollout presents its certificate. With
`address`, the service runs elsewhere and nothing is launched: your own service, or meshrl's
built-in one started by `meshrl serve environment` (compose, Kubernetes), which serves
`builtin`. The token itself never goes in the config: name an environment variable or a file.
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from meshrl.config.algorithm import Strict
from meshrl.config.external_calls import TlsConfig
from meshrl.config.openenv import OpenEnvConfig
from meshrl.config.parts import builtin_environments
from meshrl.config.parts_table import known
from meshrl.config.secrets import check_env_name
from meshrl.config.textarena import TextArenaConfig
from meshrl.config.values import MAX_REPLICAS, Name, check_address
from meshrl.config.verifiers import VerifiersConfig

# Blocks that make the environment service run an adapter of a library's environment
# (services/environment/adapters/<block>), launched like a builtin.
ADAPTERS = ("openenv", "verifiers", "textarena")
KIND = "environment"  # the run-KV service kind and NATS user of launched replicas


class SandboxConfig(Strict):
    """Limits of the built-in `python` tool's sandbox (services/environment/sandbox). Each has
    a cap: a tool call is a short program, and past these one call holds a replica's host
    (CPU, memory, the process table) rather than answering a step."""

    cpu_s: int = Field(5, ge=1, le=600)
    wall_s: float = Field(10.0, gt=0.0, le=1800.0)
    memory_mb: int = Field(1024, ge=64, le=65536)
    processes: int = Field(32, ge=1, le=1024)
    output_bytes: int = Field(64 * 1024, ge=1024, le=16 << 20)
    concurrent: int = Field(2, ge=1, le=64)  # programs running at once per replica


class EnvironmentConfig(Strict):
    name: Name
    builtin: str | None = None
    address: str | None = None
    replicas: int = Field(1, ge=1, le=MAX_REPLICAS)
    grpc_port: int = Field(0, ge=0, le=65535)  # launched replicas; 0 = a free port each
    timeout_s: float = Field(10.0, gt=0.0)
    max_episodes: int = Field(256, ge=1)  # open episodes per launched replica (then RESOURCE_EXHAUSTED)
    start_timeout_s: float = Field(60.0, gt=0.0)  # how long a run waits for the service's health at start
    token_env: str | None = None
    token_file: str | None = None
    tls: TlsConfig | None = None
    sandbox: SandboxConfig = SandboxConfig()
    openenv: OpenEnvConfig | None = None  # an OpenEnv server's episodes (meshrl/config/openenv.py)
    verifiers: VerifiersConfig | None = None  # a verifiers environment package (meshrl/config/verifiers.py)
    textarena: TextArenaConfig | None = None  # a single-player textarena game (meshrl/config/textarena.py)

    @field_validator("token_env")
    @classmethod
    def _env_name(cls, name: str | None) -> str | None:
        return check_env_name(name, "environment.token_env")

    @field_validator("address")
    @classmethod
    def _host_port(cls, address: str | None) -> str | None:
        return check_address("environment.address", address)

    @model_validator(mode="after")
    def _one_source(self) -> "EnvironmentConfig":
        adapters = [a for a in ADAPTERS if getattr(self, a) is not None]
        if len(adapters) > 1 or (adapters and self.builtin):
            raise ValueError(
                f"environment {self.name!r}: set one of builtin, {', '.join(ADAPTERS)}; "
                f"got {', '.join(([f'builtin={self.builtin}'] if self.builtin else []) + adapters)}"
            )
        if not self.builtin and not self.address and not adapters:
            raise ValueError(
                f"environment {self.name!r}: set builtin (one of {', '.join(builtin_environments())}: "
                f"launched by meshrl) or address (host:port of your environment service), or both "
                f"(a built-in served elsewhere by `meshrl serve environment`)"
            )
        if self.builtin and not known("built-in environment", self.builtin):
            raise ValueError(
                f"environment.builtin={self.builtin!r} is not a built-in environment; use one "
                f"of {', '.join(builtin_environments())}, or address: host:port of your own"
            )
        self._check_serving()
        return self

    def _check_serving(self) -> None:
        """TLS, token and port settings that fit how the environment is served."""
        if self.launched and self.tls is not None:
            raise ValueError(
                "environment.tls is for a service at an address; launched replicas serve the "
                "run's TLS when launch.grpc_tls is on: remove environment.tls"
            )
        if self.token_env and self.token_file:
            raise ValueError("environment: set token_env or token_file, not both")
        if self.replicas > 1 and self.grpc_port:
            raise ValueError(
                f"environment.replicas={self.replicas} with grpc_port={self.grpc_port}: each "
                f"replica needs its own port (an episode lives on one replica); set grpc_port: 0"
            )

    @property
    def adapter(self) -> str | None:
        """The adapter block set (ADAPTERS), if any: the service runs that library's environment."""
        return next((a for a in ADAPTERS if getattr(self, a) is not None), None)

    @property
    def launched(self) -> bool:
        """True when `meshrl train` starts the replicas (a builtin or an adapter, with no address)."""
        return bool(self.builtin or self.adapter) and not self.address

    @property
    def addresses(self) -> tuple[str, ...]:
        """The replicas of `address` ("a:1,b:2" lists several); none when launched here."""
        return tuple(a.strip() for a in (self.address or "").split(",") if a.strip())

    @property
    def served(self) -> str:
        """The service's --environments entry: the builtin served under the run's name."""
        return self.builtin if self.name == self.builtin else f"{self.name}={self.builtin}"
