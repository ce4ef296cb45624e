from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FinishReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FINISH_REASON_UNSPECIFIED: _ClassVar[FinishReason]
    FINISH_REASON_STOP: _ClassVar[FinishReason]
    FINISH_REASON_LENGTH: _ClassVar[FinishReason]
    FINISH_REASON_ABORT: _ClassVar[FinishReason]

class ScoreStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCORE_STATUS_UNSPECIFIED: _ClassVar[ScoreStatus]
    SCORE_STATUS_OK: _ClassVar[ScoreStatus]
    SCORE_STATUS_ERROR: _ClassVar[ScoreStatus]
    SCORE_STATUS_TIMEOUT: _ClassVar[ScoreStatus]

class RunState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_STATE_UNSPECIFIED: _ClassVar[RunState]
    RUN_STATE_STARTING: _ClassVar[RunState]
    RUN_STATE_RUNNING: _ClassVar[RunState]
    RUN_STATE_PAUSED: _ClassVar[RunState]
    RUN_STATE_STOPPING: _ClassVar[RunState]
    RUN_STATE_DONE: _ClassVar[RunState]
    RUN_STATE_FAILED: _ClassVar[RunState]
FINISH_REASON_UNSPECIFIED: FinishReason
FINISH_REASON_STOP: FinishReason
FINISH_REASON_LENGTH: FinishReason
FINISH_REASON_ABORT: FinishReason
SCORE_STATUS_UNSPECIFIED: ScoreStatus
SCORE_STATUS_OK: ScoreStatus
SCORE_STATUS_ERROR: ScoreStatus
SCORE_STATUS_TIMEOUT: ScoreStatus
RUN_STATE_UNSPECIFIED: RunState
RUN_STATE_STARTING: RunState
RUN_STATE_RUNNING: RunState
RUN_STATE_PAUSED: RunState
RUN_STATE_STOPPING: RunState
RUN_STATE_DONE: RunState
RUN_STATE_FAILED: RunState

class SamplingParams(_message.Message):
    __slots__ = ("n", "temperature", "top_p", "max_tokens", "stop", "seed", "greedy_baseline")
    N_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    GREEDY_BASELINE_FIELD_NUMBER: _ClassVar[int]
    n: int
    temperature: float
    top_p: float
    max_tokens: int
    stop: _containers.RepeatedScalarFieldContainer[str]
    seed: int
    greedy_baseline: bool
    def __init__(self, n: _Optional[int] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., max_tokens: _Optional[int] = ..., stop: _Optional[_Iterable[str]] = ..., seed: _Optional[int] = ..., greedy_baseline: _Optional[bool] = ...) -> None: ...

class PromptTask(_message.Message):
    __slots__ = ("run_id", "group_id", "prompt_text", "prompt_token_ids", "sampling", "ground_truth", "data_source", "metadata", "min_policy_version", "dataset_index", "created_unix", "ground_truth_json", "extra_json", "prompt_messages", "environment")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TEXT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    SAMPLING_FIELD_NUMBER: _ClassVar[int]
    GROUND_TRUTH_FIELD_NUMBER: _ClassVar[int]
    DATA_SOURCE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    MIN_POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    DATASET_INDEX_FIELD_NUMBER: _ClassVar[int]
    CREATED_UNIX_FIELD_NUMBER: _ClassVar[int]
    GROUND_TRUTH_JSON_FIELD_NUMBER: _ClassVar[int]
    EXTRA_JSON_FIELD_NUMBER: _ClassVar[int]
    PROMPT_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    group_id: str
    prompt_text: str
    prompt_token_ids: bytes
    sampling: SamplingParams
    ground_truth: str
    data_source: str
    metadata: _containers.ScalarMap[str, str]
    min_policy_version: int
    dataset_index: int
    created_unix: float
    ground_truth_json: str
    extra_json: str
    prompt_messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    environment: str
    def __init__(self, run_id: _Optional[str] = ..., group_id: _Optional[str] = ..., prompt_text: _Optional[str] = ..., prompt_token_ids: _Optional[bytes] = ..., sampling: _Optional[_Union[SamplingParams, _Mapping]] = ..., ground_truth: _Optional[str] = ..., data_source: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., min_policy_version: _Optional[int] = ..., dataset_index: _Optional[int] = ..., created_unix: _Optional[float] = ..., ground_truth_json: _Optional[str] = ..., extra_json: _Optional[str] = ..., prompt_messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., environment: _Optional[str] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ("role", "content")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ...) -> None: ...

class RewardComponent(_message.Message):
    __slots__ = ("name", "value", "weight", "status", "error", "latency_s")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LATENCY_S_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    weight: float
    status: ScoreStatus
    error: str
    latency_s: float
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ..., weight: _Optional[float] = ..., status: _Optional[_Union[ScoreStatus, str]] = ..., error: _Optional[str] = ..., latency_s: _Optional[float] = ...) -> None: ...

class Sample(_message.Message):
    __slots__ = ("index", "response_token_ids", "behaviour_logprobs", "response_text", "finish_reason", "reward", "reward_components", "ref_logprobs", "policy_version", "loss_mask", "turns", "env_reward", "has_env_reward")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    BEHAVIOUR_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_TEXT_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    REWARD_COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    REF_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    LOSS_MASK_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    ENV_REWARD_FIELD_NUMBER: _ClassVar[int]
    HAS_ENV_REWARD_FIELD_NUMBER: _ClassVar[int]
    index: int
    response_token_ids: bytes
    behaviour_logprobs: bytes
    response_text: str
    finish_reason: FinishReason
    reward: float
    reward_components: _containers.RepeatedCompositeFieldContainer[RewardComponent]
    ref_logprobs: bytes
    policy_version: int
    loss_mask: bytes
    turns: _containers.RepeatedCompositeFieldContainer[Turn]
    env_reward: float
    has_env_reward: bool
    def __init__(self, index: _Optional[int] = ..., response_token_ids: _Optional[bytes] = ..., behaviour_logprobs: _Optional[bytes] = ..., response_text: _Optional[str] = ..., finish_reason: _Optional[_Union[FinishReason, str]] = ..., reward: _Optional[float] = ..., reward_components: _Optional[_Iterable[_Union[RewardComponent, _Mapping]]] = ..., ref_logprobs: _Optional[bytes] = ..., policy_version: _Optional[int] = ..., loss_mask: _Optional[bytes] = ..., turns: _Optional[_Iterable[_Union[Turn, _Mapping]]] = ..., env_reward: _Optional[float] = ..., has_env_reward: _Optional[bool] = ...) -> None: ...

class ToolCallRecord(_message.Message):
    __slots__ = ("id", "name", "arguments_json", "error")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments_json: str
    error: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class Turn(_message.Message):
    __slots__ = ("index", "token_start", "token_end", "text", "tool_calls", "observation_text", "observation_end", "observation_truncated", "reward", "env_latency_s", "finish_reason", "done", "info_json")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TOKEN_START_FIELD_NUMBER: _ClassVar[int]
    TOKEN_END_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_TEXT_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_END_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    ENV_LATENCY_S_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    INFO_JSON_FIELD_NUMBER: _ClassVar[int]
    index: int
    token_start: int
    token_end: int
    text: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCallRecord]
    observation_text: str
    observation_end: int
    observation_truncated: bool
    reward: float
    env_latency_s: float
    finish_reason: FinishReason
    done: bool
    info_json: str
    def __init__(self, index: _Optional[int] = ..., token_start: _Optional[int] = ..., token_end: _Optional[int] = ..., text: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCallRecord, _Mapping]]] = ..., observation_text: _Optional[str] = ..., observation_end: _Optional[int] = ..., observation_truncated: _Optional[bool] = ..., reward: _Optional[float] = ..., env_latency_s: _Optional[float] = ..., finish_reason: _Optional[_Union[FinishReason, str]] = ..., done: _Optional[bool] = ..., info_json: _Optional[str] = ...) -> None: ...

class StageTiming(_message.Message):
    __slots__ = ("stage", "service", "start_unix", "end_unix")
    STAGE_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    START_UNIX_FIELD_NUMBER: _ClassVar[int]
    END_UNIX_FIELD_NUMBER: _ClassVar[int]
    stage: str
    service: str
    start_unix: float
    end_unix: float
    def __init__(self, stage: _Optional[str] = ..., service: _Optional[str] = ..., start_unix: _Optional[float] = ..., end_unix: _Optional[float] = ...) -> None: ...

class Group(_message.Message):
    __slots__ = ("run_id", "group_id", "task", "samples", "policy_version", "rollout_replica", "timings", "scored", "has_ref_logprobs", "greedy_sample", "drop_reason")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    ROLLOUT_REPLICA_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    SCORED_FIELD_NUMBER: _ClassVar[int]
    HAS_REF_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    GREEDY_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    DROP_REASON_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    group_id: str
    task: PromptTask
    samples: _containers.RepeatedCompositeFieldContainer[Sample]
    policy_version: int
    rollout_replica: str
    timings: _containers.RepeatedCompositeFieldContainer[StageTiming]
    scored: bool
    has_ref_logprobs: bool
    greedy_sample: Sample
    drop_reason: str
    def __init__(self, run_id: _Optional[str] = ..., group_id: _Optional[str] = ..., task: _Optional[_Union[PromptTask, _Mapping]] = ..., samples: _Optional[_Iterable[_Union[Sample, _Mapping]]] = ..., policy_version: _Optional[int] = ..., rollout_replica: _Optional[str] = ..., timings: _Optional[_Iterable[_Union[StageTiming, _Mapping]]] = ..., scored: _Optional[bool] = ..., has_ref_logprobs: _Optional[bool] = ..., greedy_sample: _Optional[_Union[Sample, _Mapping]] = ..., drop_reason: _Optional[str] = ...) -> None: ...

class WeightsNotice(_message.Message):
    __slots__ = ("run_id", "version", "transport", "location", "sha256", "size_bytes", "format", "step", "published_unix", "blake3", "signature")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    LOCATION_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_UNIX_FIELD_NUMBER: _ClassVar[int]
    BLAKE3_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    version: int
    transport: str
    location: str
    sha256: str
    size_bytes: int
    format: str
    step: int
    published_unix: float
    blake3: str
    signature: bytes
    def __init__(self, run_id: _Optional[str] = ..., version: _Optional[int] = ..., transport: _Optional[str] = ..., location: _Optional[str] = ..., sha256: _Optional[str] = ..., size_bytes: _Optional[int] = ..., format: _Optional[str] = ..., step: _Optional[int] = ..., published_unix: _Optional[float] = ..., blake3: _Optional[str] = ..., signature: _Optional[bytes] = ...) -> None: ...

class WeightsLoaded(_message.Message):
    __slots__ = ("run_id", "replica_id", "version", "ok", "error", "load_s")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    LOAD_S_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    replica_id: str
    version: int
    ok: bool
    error: str
    load_s: float
    def __init__(self, run_id: _Optional[str] = ..., replica_id: _Optional[str] = ..., version: _Optional[int] = ..., ok: _Optional[bool] = ..., error: _Optional[str] = ..., load_s: _Optional[float] = ...) -> None: ...

class RunStatus(_message.Message):
    __slots__ = ("run_id", "state", "step", "total_steps", "policy_version", "groups_trained", "groups_in_flight", "groups_dropped_stale", "last_metrics", "message")
    class LastMetricsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TOTAL_STEPS_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    GROUPS_TRAINED_FIELD_NUMBER: _ClassVar[int]
    GROUPS_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    GROUPS_DROPPED_STALE_FIELD_NUMBER: _ClassVar[int]
    LAST_METRICS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    state: RunState
    step: int
    total_steps: int
    policy_version: int
    groups_trained: int
    groups_in_flight: int
    groups_dropped_stale: int
    last_metrics: _containers.ScalarMap[str, float]
    message: str
    def __init__(self, run_id: _Optional[str] = ..., state: _Optional[_Union[RunState, str]] = ..., step: _Optional[int] = ..., total_steps: _Optional[int] = ..., policy_version: _Optional[int] = ..., groups_trained: _Optional[int] = ..., groups_in_flight: _Optional[int] = ..., groups_dropped_stale: _Optional[int] = ..., last_metrics: _Optional[_Mapping[str, float]] = ..., message: _Optional[str] = ...) -> None: ...
