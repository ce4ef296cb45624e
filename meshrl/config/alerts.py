"""Alert rules and where alerts go, as typed config (`RunConfig.alerts`). Never imports torch.

    alerts:
      kl_high: {max_kl: 0.3, consecutive_steps: 5, action: pause}
      webhook: {url: "https://hooks.example.com/meshrl", token_env: MESHRL_ALERT_TOKEN}

Every rule has `enabled`, `severity` (info | warning | critical) and `action` (none | pause |
stop: what the learner does after its next checkpoint). The defaults warn and never stop a
run, except non-finite loss or grad norm, which pause it: continuing would only train on
garbage. Secrets never live in config: `webhook.token_env` names the environment variable
that holds the bearer token.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from meshrl.config.algorithm import Strict
from meshrl.config.secrets import check_env_name, check_no_credentials
from meshrl.config.values import check_url_port

Severity = Literal["info", "warning", "critical"]
Action = Literal["none", "pause", "stop"]


class RuleConfig(Strict):
    enabled: bool = True
    severity: Severity = "warning"
    action: Action = "none"


class KLHighConfig(RuleConfig):
    """`metric` above `max_kl` for `consecutive_steps` steps in a row."""

    metric: str = "kl"
    max_kl: float = Field(0.5, gt=0.0)
    consecutive_steps: int = Field(3, ge=1)


class EntropyCollapseConfig(RuleConfig):
    """Entropy below `min_fraction` × the mean of its first `baseline_steps` finite values."""

    metric: str = "entropy"
    baseline_steps: int = Field(5, ge=1)
    min_fraction: float = Field(0.2, gt=0.0, lt=1.0)


class RewardNaNConfig(RuleConfig):
    """The step's mean reward is NaN/inf (null in metrics.jsonl)."""

    severity: Severity = "critical"
    metric: str = "reward"


class RewardFlatConfig(RuleConfig):
    """Population std of the last `window` step means below `min_std`: nothing is learned."""

    metric: str = "reward"
    window: int = Field(20, ge=2)
    min_std: float = Field(1e-4, ge=0.0)


class NonFiniteConfig(RuleConfig):
    """Any of `metrics` NaN/inf."""

    severity: Severity = "critical"
    action: Action = "pause"
    metrics: list[str] = ["loss", "grad_norm"]


class SpikeConfig(RuleConfig):
    """|value| > `factor` × max(median |value| of the previous `window` steps, `floor`).

    `floor` keeps a loss that hovers near zero (GRPO's often does) from "spiking" at 0.02.
    """

    metrics: list[str] = ["loss", "grad_norm"]
    factor: float = Field(10.0, gt=1.0)
    window: int = Field(50, ge=1)
    min_history: int = Field(5, ge=1)
    floor: float = Field(0.1, ge=0.0)


class StallConfig(RuleConfig):
    """No new learner step (or, once groups were reported, no new group) for `after_s`."""

    severity: Severity = "critical"
    after_s: float = Field(600.0, gt=0.0)
    startup_grace_s: float = Field(1200.0, ge=0.0)  # model load + first generation


class MemoryGrowthConfig(RuleConfig):
    """RSS never falling over the last `steps` steps and up by more than `min_growth_pct`."""

    metric: str = "memory/rss_bytes"  # sampled from this process tree when a step lacks it
    steps: int = Field(20, ge=2)
    min_growth_pct: float = Field(10.0, gt=0.0)


class ServiceDownConfig(RuleConfig):
    """A service failing `consecutive_failures` health checks in a row."""

    severity: Severity = "critical"
    consecutive_failures: int = Field(2, ge=1)
    probe_interval_s: float = Field(10.0, gt=0.0)  # the learner probes every announced replica


class RewardOutageConfig(RuleConfig):
    """Every group that arrived for `after_s` seconds failed scoring (a reward component down).

    Besides the alert, the learner acts on it: it publishes one probe prompt at a time instead
    of a full in-flight bound (no generation wasted while nothing can be scored), says what it
    waits for in its status, goes back to full speed at the first group scored again, and
    after `max_wait_s` of outage checkpoints and stops with a message."""

    severity: Severity = "critical"
    after_s: float = Field(30.0, gt=0.0)
    max_wait_s: float = Field(600.0, gt=0.0)


class EnvOutageConfig(RuleConfig):
    """Every group that arrived for `after_s` seconds was dropped because an episode's
    environment could not be reached or did not answer in time (`env_unavailable`,
    `env_deadline_exceeded`: the environment service is down or stuck).

    The learner does not wait for `after_s` (the alert's): from the first such drop it sends one
    probe prompt per `probe_every_s` instead of a full in-flight bound, and every group dropped
    for the outage gives its prompt back to the draw (trained later, same seed), so an outage
    costs its duration, not the dataset. Its status says what it waits for, full speed again
    at the first group whose episodes ran, and after `max_wait_s` a checkpoint and a stop."""

    severity: Severity = "critical"
    after_s: float = Field(30.0, gt=0.0)
    max_wait_s: float = Field(600.0, gt=0.0)
    probe_every_s: float = Field(5.0, gt=0.0)


class DroppedInARowConfig(RuleConfig):
    """`max_groups` groups in a row were dropped, none kept, for reasons that do not pass by
    themselves: the rollout gave up on them (an environment that fails or answers outside
    the contract, a prompt with no room for a turn) or they could not be trained (malformed,
    empty). Not counted: stale, orphaned and no_signal groups (the mesh's normal flow) and
    outages, which have their own limits (`reward_outage`, `env_outage`).

    Besides the alert, the learner checkpoints (when it has trained a step) and stops, naming
    the top reasons and how to fix each: else it would republish prompts forever and never
    finish a step. Keep `max_groups` above `learner.max_groups_in_flight` (a replica that
    dies may take that many groups with it)."""

    severity: Severity = "critical"
    max_groups: int = Field(64, ge=1)


class EnvDropRateConfig(RuleConfig):
    """Over the last `window` steps, more than `max_fraction` of the groups that arrived were
    dropped by the rollout (`Group.drop_reason`: an episode's environment failed, timed out or
    lost the episode), once at least `min_groups` arrived in the window."""

    max_fraction: float = Field(0.2, gt=0.0, le=1.0)
    window: int = Field(5, ge=1)
    min_groups: int = Field(4, ge=1)


class WebhookConfig(Strict):
    """POST each alert as JSON to `url`; bearer token from the env var named `token_env` or
    from the file named `token_file` (a mounted secret), never from the config itself."""

    url: str
    timeout_s: float = Field(5.0, gt=0.0)
    retries: int = Field(2, ge=0)  # attempts after the first
    backoff_s: float = Field(1.0, ge=0.0)  # doubles after each failed attempt
    token_env: str | None = None
    token_file: str | None = None
    min_severity: Severity = "warning"

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"alerts.webhook.url must be an http(s) URL, got {url!r}")
        return check_url_port("alerts.webhook.url", check_no_credentials(url, "alerts.webhook.url"))

    @field_validator("token_env")
    @classmethod
    def _env_name(cls, name: str | None) -> str | None:
        return check_env_name(name, "alerts.webhook.token_env")

    @model_validator(mode="after")
    def _one_token_source(self) -> "WebhookConfig":
        if self.token_env is not None and self.token_file is not None:
            raise ValueError("alerts.webhook: set token_env or token_file, not both")
        return self


class AlertsConfig(Strict):
    enabled: bool = True
    events_file: bool = True  # every alert also goes to the run dir's alerts file (meshrl.run_layout.ALERTS)
    webhook: WebhookConfig | None = None
    kl_high: KLHighConfig = KLHighConfig()
    entropy_collapse: EntropyCollapseConfig = EntropyCollapseConfig()
    reward_nan: RewardNaNConfig = RewardNaNConfig()
    reward_flat: RewardFlatConfig = RewardFlatConfig()
    nonfinite: NonFiniteConfig = NonFiniteConfig()
    spike: SpikeConfig = SpikeConfig()
    rollout_stalled: StallConfig = StallConfig()
    memory_growth: MemoryGrowthConfig = MemoryGrowthConfig()
    service_down: ServiceDownConfig = ServiceDownConfig()
    reward_outage: RewardOutageConfig = RewardOutageConfig()
    env_drop_rate: EnvDropRateConfig = EnvDropRateConfig()
    env_outage: EnvOutageConfig = EnvOutageConfig()
    dropped_in_a_row: DroppedInARowConfig = DroppedInARowConfig()
