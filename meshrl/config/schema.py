"""The whole run config: one typed tree. `RunConfig` is what every service receives.

Sections own one concern each; `meshrl train CONFIG.yaml a.b=c` fills them, and the run
dir keeps the resolved result (`config.yaml`) so any run can be repeated exactly.
"""

import os
from typing import Literal

from pydantic import Field, field_validator, model_validator

from meshrl.config.agent import AgentConfig
from meshrl.config.alerts import AlertsConfig
from meshrl.config.algorithm import AlgorithmConfig, Strict, TrainerConfig
from meshrl.config.environment import EnvironmentConfig
from meshrl.config.eval import EvalConfig, eval_problems
from meshrl.config.external_calls import EXTERNAL_ONLY, BreakerConfig, FailurePolicy, RetryConfig, TlsConfig
from meshrl.config.launch import LaunchConfig, yaml_switch
from meshrl.config.lora import ENGINE_LORA_RANKS, LoraSettings
from meshrl.config.parts import EXTERNAL_REWARD_KIND, REWARD_MODEL_KIND, check_name, reward_rule_kinds
from meshrl.config.reward_model import RewardModelConfig, reward_model_problems
from meshrl.config.reward_rules import check_rule_params
from meshrl.config.sampling import sampling_problems
from meshrl.config.secrets import check_env_name, check_no_credentials
from meshrl.config.trackers import MlflowConfig, TrackerName, WandbConfig
from meshrl.config.values import (
    ACK_WAIT_S,
    MAX_KV_CACHE_GB,
    MAX_NATS_REPLICAS,
    MAX_RANKS,
    MAX_REPLICAS,
    MAX_STEPS,
    MAX_TENSOR_PARALLEL,
    Name,
    Port,
    check_address,
    check_endpoint,
    check_url_port,
)
from meshrl.errors import ConfigError


class ModelConfig(Strict):
    """A Hugging Face model dir (safetensors) or a GGUF file; `tokenizer` defaults to `path`."""

    path: str
    gguf_file: str | None = None
    tokenizer: str | None = None
    # rollout and reference weights; auto = what the host runs fastest (meshrl.inputs.models.precision).
    # The learner keeps fp32 master weights whatever this says (trainer.precision sets its autocast).
    dtype: Literal["auto", "float32", "bfloat16"] = "float32"
    lora: LoraSettings | None = None  # train adapters over a frozen base (config/lora.py)

    @field_validator("path", "tokenizer")
    @classmethod
    def _expand_home(cls, value: str | None) -> str | None:
        return None if value is None else os.path.expanduser(value)


class DataConfig(Strict):
    """verl-style rows: `prompt` (chat messages), `reward_model.ground_truth`, `data_source`.

    DPO rows carry `prompt`, `chosen`, `rejected` (TRL's convention).
    """

    train: str
    eval: str | None = None
    max_prompt_tokens: int = Field(256, ge=1)
    shuffle: bool = True
    apply_chat_template: bool = True


class SamplingConfig(Strict):
    """Group sampling on the rollout engine."""

    group_size: int = Field(8, ge=1)
    temperature: float = Field(1.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(64, ge=1)
    stop: list[str] = []


class RolloutConfig(Strict):
    replicas: int = Field(1, ge=1, le=MAX_REPLICAS)
    sampling: SamplingConfig = SamplingConfig()
    kv_cache_gb: float = Field(1.0, gt=0.0, le=MAX_KV_CACHE_GB)  # GiB, fractions allowed (vLLM kv_cache_memory_bytes)
    enforce_eager: bool = True
    max_model_len: int = Field(512, ge=16)
    grpc_port: Port = 0  # 0 = pick a free port
    # A replica silent this long (dead, frozen, partitioned; a live one sends in-progress acks
    # every third of it, however long its generation) loses its prompt tasks to the other
    # replicas: the time a killed replica's group is lost for, so it is kept short (docs/benchmarks.md,
    # "Recovery on the real mesh"). Three missed heartbeats, so a loaded host is not mistaken for a dead one.
    ack_wait_s: float = Field(ACK_WAIT_S, gt=0.0)
    # vLLM workers one replica's engine spans (tensor parallelism; must divide the model's
    # attention heads, checked when the replica starts: meshrl/plan/parallel.py)
    tensor_parallel_size: int = Field(1, ge=1, le=MAX_TENSOR_PARALLEL)
    agent: AgentConfig = AgentConfig()  # multi-turn episodes (tasks with an environment): config/agent.py


class RewardComponentConfig(Strict):
    """One reward term. `kind` picks a built-in rule, `external` (a gRPC service) or
    `reward_model` (the run's learned reward model: config/reward_model.py)."""

    name: Name
    kind: str
    weight: float = 1.0
    params: dict = {}
    address: str | None = None  # external: host:port of a RewardService (reward_model: optional)
    timeout_s: float = Field(10.0, gt=0.0)
    on_failure: FailurePolicy = "drop"  # what a failed score does (config/external_calls.py)
    # kind: external only: how it is called (config/external_calls.py)
    max_concurrency: int = Field(4, ge=1)
    batch_size: int = Field(1000, ge=1)
    retry: RetryConfig = RetryConfig()
    breaker: BreakerConfig = BreakerConfig()
    cache_size: int = Field(0, ge=0)
    tls: TlsConfig | None = None
    token_env: str | None = None  # name of the env var holding the bearer token (never the token)
    token_file: str | None = None  # or a file holding it

    @field_validator("token_env")
    @classmethod
    def _env_name(cls, name: str | None, info) -> str | None:
        return check_env_name(name, f"reward component {info.data.get('name', '?')!r}: token_env")

    @field_validator("address")
    @classmethod
    def _host_port(cls, address: str | None, info) -> str | None:
        return check_address(f"reward component {info.data.get('name', '?')!r}: address", address)

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        return check_name(
            "reward.components[].kind",
            kind,
            (*reward_rule_kinds(), EXTERNAL_REWARD_KIND, REWARD_MODEL_KIND),
            "reward component kind",
            kind="reward rule",
        )

    @model_validator(mode="after")
    def _address_matches_kind(self) -> "RewardComponentConfig":
        external = self.kind in (EXTERNAL_REWARD_KIND, REWARD_MODEL_KIND)  # both called over gRPC
        if self.kind == EXTERNAL_REWARD_KIND and not self.address:
            raise ValueError(
                f"reward component {self.name!r} has kind 'external' but no address: "
                f"set address: host:port of its RewardService"
            )
        if self.address and not external:
            raise ValueError(
                f"reward component {self.name!r} (kind {self.kind!r}) ignores "
                f"address={self.address!r}: remove it, or set kind: external"
            )
        if self.kind == REWARD_MODEL_KIND and self.params:
            raise ValueError(
                f"reward component {self.name!r} (kind reward_model) takes no params: "
                f"the model's settings go in the reward_model section"
            )
        check_rule_params(self.kind, self.name, self.params)  # a built-in rule's: now, not at service start
        stray = [] if external else self._changed_external_only_fields()
        if stray:
            raise ValueError(
                f"reward component {self.name!r} (kind {self.kind!r}) ignores {stray}: "
                f"they only apply to kind: external; remove them"
            )
        if self.token_env and self.token_file:
            raise ValueError(f"reward component {self.name!r}: set token_env or token_file, not both")
        return self

    def _changed_external_only_fields(self) -> list[str]:
        """The external-only fields set to other than their defaults. Compared with the defaults,
        not model_fields_set: a resolved config.yaml lists every field."""
        return sorted(f for f in EXTERNAL_ONLY if getattr(self, f) != type(self).model_fields[f].default)


class RewardConfig(Strict):
    replicas: int = Field(1, ge=1, le=MAX_REPLICAS)
    # A replica silent this long (killed while scoring a group) loses that group to another
    # replica; a live one sends in-progress acks every third of it, however long it scores.
    ack_wait_s: float = Field(ACK_WAIT_S, gt=0.0)
    components: list[RewardComponentConfig] = [RewardComponentConfig(name="math", kind="math_verify", weight=1.0)]

    @field_validator("components")
    @classmethod
    def _unique_names(cls, components: list[RewardComponentConfig]) -> list[RewardComponentConfig]:
        names = [c.name for c in components]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:  # scores, metrics and eval.correct_component are keyed by name
            raise ValueError(f"reward.components names must be unique; {twice} appear more than once: rename one")
        return components


class ReferenceConfig(Strict):
    """The frozen reference model. `enabled: auto` = only when the algorithm needs it."""

    enabled: Literal["auto", "on", "off"] = "auto"
    replicas: int = Field(1, ge=1, le=MAX_REPLICAS)
    micro_batch_size: int = Field(8, ge=1)
    grpc_port: Port = 0
    ack_wait_s: float = Field(ACK_WAIT_S, gt=0.0)  # as reward.ack_wait_s, for the scored groups
    address: str | None = None  # host:port the learner calls (DPO); default 127.0.0.1:grpc_port

    @field_validator("address")
    @classmethod
    def _host_port(cls, address: str | None) -> str | None:
        return check_address("reference.address", address)

    @field_validator("enabled", mode="before")
    @classmethod
    def _yaml_booleans(cls, value):
        return yaml_switch(value)

    timeout_s: float = Field(120.0, gt=0.0)

    @property
    def resolved_address(self) -> str:
        return self.address or f"127.0.0.1:{self.grpc_port}"


class LearnerConfig(Strict):
    steps: int = Field(20, ge=1, le=MAX_STEPS)
    prompts_per_step: int = Field(8, ge=1)
    max_staleness: int = Field(0, ge=0)  # 0 = synchronous on-policy
    max_groups_in_flight: int | None = Field(None, ge=1)  # None = prompts_per_step × (staleness+1)
    push_every: int = Field(1, ge=1)
    # shm: a file in /dev/shm (one host); objectstore: JetStream's object store (any host);
    # collective: straight into each engine over NCCL/gloo from the learner's memory (GPUs);
    # auto: collective when the learner runs on CUDA, else shm
    weights_transport: Literal["auto", "shm", "objectstore", "collective"] = "auto"
    # shm/objectstore: stage the weights into host buffers on the trainer thread, then write,
    # hash and announce them in the background while the next step trains (one host copy of
    # the weights kept); false = all on the trainer thread, no copy (services/learner/weights.py)
    push_in_background: bool = True
    weights_port: int = Field(0, ge=0, le=65535)  # collective: the learner's weights server (0 = any free)
    # On by default: a crash loses at most this many steps (the launcher restarts the learner
    # from the newest checkpoint). 0 = only at the end, on SIGTERM and before an alert acts.
    checkpoint_every: int = Field(10, ge=0)
    keep_checkpoints: int = Field(3, ge=1)  # the newest K are kept, plus every tagged one
    stop_grace_s: float = Field(300.0, gt=0.0)  # on stop: time the learner gets to checkpoint
    grpc_port: Port = 0
    # torchrun ranks of the learner (FSDP2; services/learner/ranks.py); the launcher runs torchrun when > 1
    ranks: int = 1

    @field_validator("ranks", mode="before")
    @classmethod
    def _whole_ranks(cls, value):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RANKS:
            raise ValueError(
                f"learner.ranks={value!r}: the number of learner processes (torchrun ranks) "
                f"must be a whole number 1..{MAX_RANKS}, e.g. `learner.ranks: 2`"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data):
        """Configs saved before `eval` had its own section hold `eval_every: 0`: dropped."""
        if isinstance(data, dict) and data.get("eval_every", 0) in (0, None):
            data = {k: v for k, v in data.items() if k != "eval_every"}
        if isinstance(data, dict) and "eval_every" in data:
            raise ValueError(
                f"learner.eval_every={data['eval_every']!r} moved to eval.every "
                f"(evaluation has its own section: see meshrl/config/eval.py)"
            )
        return data

    @property
    def in_flight_bound(self) -> int:
        return self.max_groups_in_flight or self.prompts_per_step * (self.max_staleness + 1)


class NatsConfig(Strict):
    """`url: embedded` starts a local nats-server with JetStream data in the run dir."""

    url: str = "embedded"  # or nats://host:4222, or a comma-separated list of a cluster's nodes
    connect_timeout_s: float = Field(5.0, gt=0.0)
    # JetStream copies of every stream, the run KV and the weights store: 3 on a three-node
    # cluster survives the loss of a node; must not exceed the cluster's size.
    replicas: int = Field(1, ge=1, le=MAX_NATS_REPLICAS)
    # How long a service started before its run's learner waits for the run's streams.
    run_wait_s: float = Field(600.0, gt=0.0)
    # Embedded server only: "on" serves TLS with a run CA the launcher makes in RUN_DIR/secrets;
    # "mutual" also requires each client's certificate. An external server: MESHRL_NATS_TLS_* env.
    tls: Literal["off", "on", "mutual"] = "off"

    @field_validator("url")
    @classmethod
    def _no_credentials(cls, url: str) -> str:
        return check_url_port("nats.url", check_no_credentials(url, "nats.url"))

    @field_validator("tls", mode="before")
    @classmethod
    def _yaml_booleans(cls, value):
        return yaml_switch(value)


class TelemetryConfig(Strict):
    """Traces go to RUN_DIR/traces/*.jsonl (OTLP JSON), and to OTLP too when an endpoint is set.

    Every service process also serves Prometheus metrics on 127.0.0.1 when `metrics` is on,
    and puts its URL under the run KV key `metrics.<service>.<replica>`.
    """

    tracing: bool = True
    otlp_endpoint: str | None = None
    metrics: bool = True
    # The same port in every process: right for one service per network namespace (a pod);
    # several processes on one host need 0 (a free port each), else the second one fails.
    metrics_port: int = Field(0, ge=0, le=65535)
    tensorboard: bool = False  # the same as naming tensorboard in `trackers` (RUN_DIR/tensorboard)
    trackers: list[TrackerName] = []  # experiment trackers beside metrics.jsonl (config/trackers.py)
    mlflow: MlflowConfig = MlflowConfig()
    wandb: WandbConfig = WandbConfig()

    @field_validator("otlp_endpoint")
    @classmethod
    def _endpoint(cls, url: str | None) -> str | None:
        """http(s)://HOST:PORT[/v1/traces] or HOST:PORT (gRPC); empty = none."""
        return check_endpoint("telemetry.otlp_endpoint", url or None, ("http", "https"))

    @property
    def tracker_names(self) -> list[str]:
        """The trackers to start, each once: `trackers`, plus tensorboard when the flag is on."""
        names = list(dict.fromkeys(self.trackers))
        return names + ["tensorboard"] if self.tensorboard and "tensorboard" not in names else names


class RunSection(Strict):
    name: Name = "run"
    dir: str = "runs/${run.name}"
    seed: int = 0


class RunConfig(Strict):
    run: RunSection = RunSection()
    model: ModelConfig
    data: DataConfig
    algorithm: AlgorithmConfig = AlgorithmConfig()
    trainer: TrainerConfig = TrainerConfig()
    rollout: RolloutConfig = RolloutConfig()
    reward: RewardConfig = RewardConfig()
    reference: ReferenceConfig = ReferenceConfig()
    reward_model: RewardModelConfig | None = None  # a `kind: reward_model` component's model
    environment: EnvironmentConfig | None = None  # multi-turn tasks' environment (config/environment.py)
    learner: LearnerConfig = LearnerConfig()
    eval: EvalConfig = EvalConfig()
    nats: NatsConfig = NatsConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    alerts: AlertsConfig = AlertsConfig()
    launch: LaunchConfig = LaunchConfig()

    @property
    def reference_enabled(self) -> bool:
        """Whether the reference service runs. With LoRA online it does not: the learner takes
        reference log-probs from its own base with the adapter off (no second model copy)."""
        if self.model.lora is not None and not self.algorithm.offline:
            return False
        if self.reference.enabled == "auto":
            return self.algorithm.needs_reference
        return self.reference.enabled == "on"

    @property
    def ack_waits(self) -> dict[str, float]:
        """Each consuming service kind's ack wait (transport/bus/subjects.py run_consumers)."""
        return {
            "rollout": self.rollout.ack_wait_s,
            "reward": self.reward.ack_wait_s,
            "reference": self.reference.ack_wait_s,
        }

    @model_validator(mode="after")
    def _batch_arithmetic(self) -> "RunConfig":
        for problem in (
            batch_arithmetic_problems(self)
            + staleness_problems(self)
            + eval_problems(self)
            + sampling_problems(self)
            + reward_model_problems(self)
            + lora_problems(self)
        ):
            raise ConfigError(problem)
        return self


def lora_problems(cfg: "RunConfig") -> list[str]:
    """What model.lora cannot be combined with yet, each naming the fix."""
    if cfg.model.lora is None:
        return []
    problems = []
    if cfg.learner.ranks > 1:
        problems.append(
            f"model.lora with learner.ranks={cfg.learner.ranks}: LoRA trains on one learner "
            f"process (its adapters are megabytes: no sharding needed); set learner.ranks=1"
        )
    if cfg.algorithm.critic.enabled:
        problems.append(
            "model.lora with algorithm.critic.enabled: the critic would share the adapted "
            "base; train the critic without LoRA (remove model.lora) or use a critic-free preset"
        )
    if cfg.model.lora.push == "adapter":
        problems += adapter_push_problems(cfg)
    return problems


def adapter_push_problems(cfg: "RunConfig") -> list[str]:
    """An adapter travels as a file vLLM loads by path: not over the collective transport,
    and only at a rank vLLM serves."""
    problems = []
    if cfg.learner.weights_transport == "collective":
        problems.append(
            "model.lora.push=adapter with learner.weights_transport=collective: vLLM loads a "
            "LoRA adapter from files; use shm or objectstore (or auto), or model.lora.push=merged"
        )
    if cfg.model.lora.rank > ENGINE_LORA_RANKS[-1]:
        problems.append(
            f"model.lora.rank={cfg.model.lora.rank}: vLLM serves LoRA adapters up to rank "
            f"{ENGINE_LORA_RANKS[-1]}; lower the rank or set model.lora.push=merged"
        )
    return problems


def staleness_problems(cfg: "RunConfig") -> list[str]:
    """Asynchrony the rollout cannot give: with `max_staleness` ≥ 1 the rollout generates the
    next step's groups while the learner trains, which needs room for more than one step's
    groups in flight; an explicit bound of one step's makes the setting do nothing."""
    learner = cfg.learner
    if learner.max_staleness == 0 or learner.max_groups_in_flight is None:
        return []
    if learner.max_groups_in_flight > learner.prompts_per_step:
        return []
    return [
        f"learner.max_staleness={learner.max_staleness} asks the rollout to generate ahead, but "
        f"learner.max_groups_in_flight={learner.max_groups_in_flight} lets no group out beyond the step being "
        f"trained (learner.prompts_per_step={learner.prompts_per_step}); raise it to "
        f"{learner.prompts_per_step * (learner.max_staleness + 1)}, drop it (that is the default), or set max_staleness=0"
    ]


def batch_arithmetic_problems(cfg: "RunConfig") -> list[str]:
    """Numbers that must agree with each other, each problem naming the keys involved."""
    return [
        *_step_fill_problems(cfg),
        *_service_problems(cfg),
        *_rank_and_push_problems(cfg),
        *_overlong_problems(cfg),
    ]


def _step_fill_problems(cfg: "RunConfig") -> list[str]:
    """A step's sequences must split into mini-batches, and enough groups be let out to fill it."""
    problems = []
    sequences = cfg.learner.prompts_per_step * cfg.rollout.sampling.group_size
    if sequences % cfg.trainer.mini_batches:
        problems.append(
            f"learner.prompts_per_step × rollout.sampling.group_size = {sequences} sequences per "
            f"step is not divisible by trainer.mini_batches={cfg.trainer.mini_batches}"
        )
    if cfg.learner.in_flight_bound < cfg.learner.prompts_per_step:
        problems.append(
            f"learner.max_groups_in_flight={cfg.learner.max_groups_in_flight} is below "
            f"learner.prompts_per_step={cfg.learner.prompts_per_step}: a step could never fill"
        )
    return problems


def _service_problems(cfg: "RunConfig") -> list[str]:
    """What the learner asks of the rollout and reference services that they cannot give."""
    problems = []
    if cfg.rollout.tensor_parallel_size > 1 and cfg.learner.weights_transport == "collective":
        problems.append(
            f"rollout.tensor_parallel_size={cfg.rollout.tensor_parallel_size} with "
            f"learner.weights_transport=collective: the collective transport is wired to one engine "
            f"worker; use shm or objectstore (every worker reads its shard from the file)"
        )
    if cfg.reference.enabled == "off" and cfg.algorithm.needs_reference:
        problems.append(
            f"reference.enabled=off, but algorithm.kl_coef={cfg.algorithm.kl_coef}"
            f"{' (offline preference training)' if cfg.algorithm.offline else ''} needs the reference "
            f"model's log-probs: set reference.enabled=auto, or algorithm.kl_coef=0"
        )
    return problems


def _rank_and_push_problems(cfg: "RunConfig") -> list[str]:
    """Ranks must share a step's groups evenly; on-policy training must push after every step."""
    problems = []
    if cfg.learner.prompts_per_step % cfg.learner.ranks or (cfg.learner.ranks > 1 and cfg.algorithm.offline):
        problems.append(
            f"learner.ranks={cfg.learner.ranks} needs learner.prompts_per_step (now "
            f"{cfg.learner.prompts_per_step}) to be a multiple of it (each rank trains whole groups, as many "
            f"as the others) and an online algorithm (offline preference training runs on one rank)"
        )
    if cfg.learner.max_staleness == 0 and cfg.learner.push_every != 1:
        problems.append(f"learner.max_staleness=0 (on-policy) needs learner.push_every=1, got {cfg.learner.push_every}")
    return problems


def _overlong_problems(cfg: "RunConfig") -> list[str]:
    overlong = cfg.algorithm.overlong
    if overlong.enabled and overlong.buffer_len > cfg.rollout.sampling.max_tokens:
        return [
            f"algorithm.overlong.buffer_len={overlong.buffer_len} exceeds "
            f"rollout.sampling.max_tokens={cfg.rollout.sampling.max_tokens}: the soft overlong "
            f"penalty ramps over the last buffer_len tokens, so it must fit inside max_tokens"
        ]
    return []
