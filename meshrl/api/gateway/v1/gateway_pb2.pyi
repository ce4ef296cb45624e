from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RunSummary(_message.Message):
    __slots__ = ("name", "live", "run_id", "last_step", "updated_unix")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_STEP_FIELD_NUMBER: _ClassVar[int]
    UPDATED_UNIX_FIELD_NUMBER: _ClassVar[int]
    name: str
    live: bool
    run_id: str
    last_step: int
    updated_unix: float
    def __init__(self, name: _Optional[str] = ..., live: _Optional[bool] = ..., run_id: _Optional[str] = ..., last_step: _Optional[int] = ..., updated_unix: _Optional[float] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs",)
    RUNS_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[RunSummary]
    def __init__(self, runs: _Optional[_Iterable[_Union[RunSummary, _Mapping]]] = ...) -> None: ...

class GetRunStatusRequest(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: str
    def __init__(self, run: _Optional[str] = ...) -> None: ...

class Learner(_message.Message):
    __slots__ = ("grpc", "state", "step", "total_steps", "policy_version", "groups_trained", "groups_in_flight", "message", "error")
    GRPC_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TOTAL_STEPS_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    GROUPS_TRAINED_FIELD_NUMBER: _ClassVar[int]
    GROUPS_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    grpc: str
    state: str
    step: int
    total_steps: int
    policy_version: int
    groups_trained: int
    groups_in_flight: int
    message: str
    error: str
    def __init__(self, grpc: _Optional[str] = ..., state: _Optional[str] = ..., step: _Optional[int] = ..., total_steps: _Optional[int] = ..., policy_version: _Optional[int] = ..., groups_trained: _Optional[int] = ..., groups_in_flight: _Optional[int] = ..., message: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class Replica(_message.Message):
    __slots__ = ("service", "replica", "grpc", "has_weights_version", "weights_version", "health", "groups_generated", "error")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    GRPC_FIELD_NUMBER: _ClassVar[int]
    HAS_WEIGHTS_VERSION_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_VERSION_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FIELD_NUMBER: _ClassVar[int]
    GROUPS_GENERATED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    service: str
    replica: str
    grpc: str
    has_weights_version: bool
    weights_version: int
    health: str
    groups_generated: int
    error: str
    def __init__(self, service: _Optional[str] = ..., replica: _Optional[str] = ..., grpc: _Optional[str] = ..., has_weights_version: _Optional[bool] = ..., weights_version: _Optional[int] = ..., health: _Optional[str] = ..., groups_generated: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class QueueDepth(_message.Message):
    __slots__ = ("stream", "consumer", "pending", "ack_pending")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    ACK_PENDING_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    pending: int
    ack_pending: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., pending: _Optional[int] = ..., ack_pending: _Optional[int] = ...) -> None: ...

class RunOutcome(_message.Message):
    __slots__ = ("ended", "final_reward", "accuracy_before", "accuracy_after", "accuracy_after_step", "eval_prompts", "final_model")
    ENDED_FIELD_NUMBER: _ClassVar[int]
    FINAL_REWARD_FIELD_NUMBER: _ClassVar[int]
    ACCURACY_BEFORE_FIELD_NUMBER: _ClassVar[int]
    ACCURACY_AFTER_FIELD_NUMBER: _ClassVar[int]
    ACCURACY_AFTER_STEP_FIELD_NUMBER: _ClassVar[int]
    EVAL_PROMPTS_FIELD_NUMBER: _ClassVar[int]
    FINAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    ended: str
    final_reward: float
    accuracy_before: float
    accuracy_after: float
    accuracy_after_step: int
    eval_prompts: int
    final_model: str
    def __init__(self, ended: _Optional[str] = ..., final_reward: _Optional[float] = ..., accuracy_before: _Optional[float] = ..., accuracy_after: _Optional[float] = ..., accuracy_after_step: _Optional[int] = ..., eval_prompts: _Optional[int] = ..., final_model: _Optional[str] = ...) -> None: ...

class GetRunStatusResponse(_message.Message):
    __slots__ = ("run", "learner", "replicas", "wanted", "queues", "outcome")
    class WantedEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    RUN_FIELD_NUMBER: _ClassVar[int]
    LEARNER_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    WANTED_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    run: RunSummary
    learner: Learner
    replicas: _containers.RepeatedCompositeFieldContainer[Replica]
    wanted: _containers.ScalarMap[str, int]
    queues: _containers.RepeatedCompositeFieldContainer[QueueDepth]
    outcome: RunOutcome
    def __init__(self, run: _Optional[_Union[RunSummary, _Mapping]] = ..., learner: _Optional[_Union[Learner, _Mapping]] = ..., replicas: _Optional[_Iterable[_Union[Replica, _Mapping]]] = ..., wanted: _Optional[_Mapping[str, int]] = ..., queues: _Optional[_Iterable[_Union[QueueDepth, _Mapping]]] = ..., outcome: _Optional[_Union[RunOutcome, _Mapping]] = ...) -> None: ...

class ListCheckpointsRequest(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: str
    def __init__(self, run: _Optional[str] = ...) -> None: ...

class Checkpoint(_message.Message):
    __slots__ = ("step", "status", "created", "size_bytes", "tags", "reason")
    STEP_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    step: int
    status: str
    created: str
    size_bytes: int
    tags: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    def __init__(self, step: _Optional[int] = ..., status: _Optional[str] = ..., created: _Optional[str] = ..., size_bytes: _Optional[int] = ..., tags: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ...) -> None: ...

class ListCheckpointsResponse(_message.Message):
    __slots__ = ("checkpoints",)
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    checkpoints: _containers.RepeatedCompositeFieldContainer[Checkpoint]
    def __init__(self, checkpoints: _Optional[_Iterable[_Union[Checkpoint, _Mapping]]] = ...) -> None: ...

class ListSamplesRequest(_message.Message):
    __slots__ = ("run", "page_size", "page_token", "split")
    RUN_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    run: str
    page_size: int
    page_token: str
    split: str
    def __init__(self, run: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., split: _Optional[str] = ...) -> None: ...

class ListSamplesResponse(_message.Message):
    __slots__ = ("samples", "next_page_token", "total")
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    samples: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    next_page_token: str
    total: int
    def __init__(self, samples: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total: _Optional[int] = ...) -> None: ...

class GetGroupTraceRequest(_message.Message):
    __slots__ = ("run", "group_id")
    RUN_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    run: str
    group_id: str
    def __init__(self, run: _Optional[str] = ..., group_id: _Optional[str] = ...) -> None: ...

class GetGroupTraceResponse(_message.Message):
    __slots__ = ("spans", "linked")
    SPANS_FIELD_NUMBER: _ClassVar[int]
    LINKED_FIELD_NUMBER: _ClassVar[int]
    spans: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    linked: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    def __init__(self, spans: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., linked: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ...) -> None: ...

class StreamRecordsRequest(_message.Message):
    __slots__ = ("run", "from_index", "follow")
    RUN_FIELD_NUMBER: _ClassVar[int]
    FROM_INDEX_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    run: str
    from_index: int
    follow: bool
    def __init__(self, run: _Optional[str] = ..., from_index: _Optional[int] = ..., follow: _Optional[bool] = ...) -> None: ...

class Record(_message.Message):
    __slots__ = ("index", "row")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ROW_FIELD_NUMBER: _ClassVar[int]
    index: int
    row: _struct_pb2.Struct
    def __init__(self, index: _Optional[int] = ..., row: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class RunActionRequest(_message.Message):
    __slots__ = ("run", "reason")
    RUN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    run: str
    reason: str
    def __init__(self, run: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class RunActionResponse(_message.Message):
    __slots__ = ("message", "learner", "checkpoint_step", "path")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LEARNER_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_STEP_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    message: str
    learner: Learner
    checkpoint_step: int
    path: str
    def __init__(self, message: _Optional[str] = ..., learner: _Optional[_Union[Learner, _Mapping]] = ..., checkpoint_step: _Optional[int] = ..., path: _Optional[str] = ...) -> None: ...

class ScaleServiceRequest(_message.Message):
    __slots__ = ("run", "service", "replicas")
    RUN_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    run: str
    service: str
    replicas: int
    def __init__(self, run: _Optional[str] = ..., service: _Optional[str] = ..., replicas: _Optional[int] = ...) -> None: ...

class SubmitRunRequest(_message.Message):
    __slots__ = ("config_yaml", "overrides", "name")
    CONFIG_YAML_FIELD_NUMBER: _ClassVar[int]
    OVERRIDES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    config_yaml: str
    overrides: _containers.RepeatedScalarFieldContainer[str]
    name: str
    def __init__(self, config_yaml: _Optional[str] = ..., overrides: _Optional[_Iterable[str]] = ..., name: _Optional[str] = ...) -> None: ...

class SubmitRunResponse(_message.Message):
    __slots__ = ("run", "launcher_pid")
    RUN_FIELD_NUMBER: _ClassVar[int]
    LAUNCHER_PID_FIELD_NUMBER: _ClassVar[int]
    run: str
    launcher_pid: int
    def __init__(self, run: _Optional[str] = ..., launcher_pid: _Optional[int] = ...) -> None: ...

class ExportRunRequest(_message.Message):
    __slots__ = ("run", "step")
    RUN_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    run: str
    step: int
    def __init__(self, run: _Optional[str] = ..., step: _Optional[int] = ...) -> None: ...

class RollbackRunRequest(_message.Message):
    __slots__ = ("run", "to_step")
    RUN_FIELD_NUMBER: _ClassVar[int]
    TO_STEP_FIELD_NUMBER: _ClassVar[int]
    run: str
    to_step: int
    def __init__(self, run: _Optional[str] = ..., to_step: _Optional[int] = ...) -> None: ...
