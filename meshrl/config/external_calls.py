"""How a reward component calls its external service, and what a failed score does.

    reward:
      components:
        - name: judge
          kind: external
          address: judge.svc:50051
          timeout_s: 10            # deadline of one Score call (per attempt)
          max_concurrency: 4       # Score calls in flight to this service, per reward replica
          batch_size: 1000         # items per Score call (a bigger group is split)
          retry: {attempts: 3, initial_backoff_s: 0.1, max_backoff_s: 2.0}
          breaker: {failures: 5, cooldown_s: 1.0}
          cache_size: 10000        # 0 = off; keyed by (prompt, response, ground truth)
          on_failure: drop         # or `stop`, or {value: 0.0}
          tls: {ca_file: ca.pem, cert_file: client.pem, key_file: client.key}
          token_env: JUDGE_TOKEN   # or token_file: /var/run/secrets/judge-token

`on_failure` applies to every component kind; the rest only to `kind: external`. The token
itself never goes in the config: name an environment variable or a file that holds it.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from meshrl.config.algorithm import Strict


class RetryConfig(Strict):
    """Attempts per Score call (1 = no retry) and the jittered exponential back-off between them."""

    attempts: int = Field(3, ge=1, le=10)
    initial_backoff_s: float = Field(0.1, gt=0.0)
    max_backoff_s: float = Field(2.0, gt=0.0)

    @model_validator(mode="after")
    def _ordered(self) -> "RetryConfig":
        if self.max_backoff_s < self.initial_backoff_s:
            raise ValueError(
                f"retry.max_backoff_s={self.max_backoff_s} is below retry.initial_backoff_s="
                f"{self.initial_backoff_s}: raise max_backoff_s or lower initial_backoff_s"
            )
        return self


class BreakerConfig(Strict):
    """Open after `failures` failed calls in a row; fail fast for `cooldown_s`, then probe."""

    failures: int = Field(5, ge=1)
    # Short: a probe per second costs one call, and bounds how late a returning service is used.
    cooldown_s: float = Field(1.0, gt=0.0)


class TlsConfig(Strict):
    """TLS to the service: `ca_file` to trust its certificate (None = the system roots);
    `cert_file` + `key_file` for mutual TLS; `server_name` overrides the name checked in
    its certificate (when the address is an IP or an alias)."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None

    @model_validator(mode="after")
    def _pair(self) -> "TlsConfig":
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError(
                "tls: mutual TLS needs both cert_file and key_file (the client certificate "
                "and its private key); set both, or neither for plain TLS"
            )
        return self


# The mesh's own gRPC TLS files, named by the deployment's environment (the launcher sets them
# for `launch.grpc_tls`; a cluster mounts them). Read by meshrl.transport.rpc.mesh_tls, and
# here by a launched reward model's caller; names only, so the config never imports grpc.
MESH_TLS_CA_ENV = "MESHRL_GRPC_TLS_CA_FILE"
MESH_TLS_CERT_ENV = "MESHRL_GRPC_TLS_CERT_FILE"
MESH_TLS_KEY_ENV = "MESHRL_GRPC_TLS_KEY_FILE"
MESH_TLS_CLIENT_AUTH_ENV = "MESHRL_GRPC_TLS_CLIENT_AUTH"
MESH_TLS_SERVER_NAME_ENV = "MESHRL_GRPC_TLS_SERVER_NAME"


class FailureValue(Strict):
    """`on_failure: {value: X}`: a failed score counts as X in the reward (the component's
    status still says ERROR/TIMEOUT and why)."""

    value: float

    @field_validator("value")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError(f"on_failure.value must be a finite number, got {value}")
        return value


FailurePolicy = Literal["drop", "stop"] | FailureValue

# Fields that only mean something for `kind: external` (rules reject them, naming them).
EXTERNAL_ONLY = frozenset(
    {"max_concurrency", "batch_size", "retry", "breaker", "cache_size", "tls", "token_env", "token_file"}
)
