from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChatMessage(_message.Message):
    __slots__ = ("role", "content", "tool_call_id", "name")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    tool_call_id: str
    name: str
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class Tool(_message.Message):
    __slots__ = ("name", "description", "parameters_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters_json: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters_json: _Optional[str] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments_json: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class ResetRequest(_message.Message):
    __slots__ = ("run_id", "episode_id", "environment", "prompt_messages", "ground_truth_json", "data_source", "extra_json", "seed", "policy", "group_seed")
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    EPISODE_ID_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    GROUND_TRUTH_JSON_FIELD_NUMBER: _ClassVar[int]
    DATA_SOURCE_FIELD_NUMBER: _ClassVar[int]
    EXTRA_JSON_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    GROUP_SEED_FIELD_NUMBER: _ClassVar[int]
    run_id: str
    episode_id: str
    environment: str
    prompt_messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    ground_truth_json: str
    data_source: str
    extra_json: str
    seed: int
    policy: PolicyEndpoint
    group_seed: int
    def __init__(self, run_id: _Optional[str] = ..., episode_id: _Optional[str] = ..., environment: _Optional[str] = ..., prompt_messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., ground_truth_json: _Optional[str] = ..., data_source: _Optional[str] = ..., extra_json: _Optional[str] = ..., seed: _Optional[int] = ..., policy: _Optional[_Union[PolicyEndpoint, _Mapping]] = ..., group_seed: _Optional[int] = ...) -> None: ...

class PolicyEndpoint(_message.Message):
    __slots__ = ("base_url", "api_key", "model")
    BASE_URL_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    base_url: str
    api_key: str
    model: str
    def __init__(self, base_url: _Optional[str] = ..., api_key: _Optional[str] = ..., model: _Optional[str] = ...) -> None: ...

class ResetResponse(_message.Message):
    __slots__ = ("observation", "tools", "info_json", "drives_policy")
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    INFO_JSON_FIELD_NUMBER: _ClassVar[int]
    DRIVES_POLICY_FIELD_NUMBER: _ClassVar[int]
    observation: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    info_json: str
    drives_policy: bool
    def __init__(self, observation: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ..., info_json: _Optional[str] = ..., drives_policy: _Optional[bool] = ...) -> None: ...

class StepRequest(_message.Message):
    __slots__ = ("episode_id", "turn", "text", "tool_calls", "truncated", "rejected_tool_calls")
    EPISODE_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    episode_id: str
    turn: int
    text: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    truncated: bool
    rejected_tool_calls: _containers.RepeatedCompositeFieldContainer[RejectedToolCall]
    def __init__(self, episode_id: _Optional[str] = ..., turn: _Optional[int] = ..., text: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., truncated: _Optional[bool] = ..., rejected_tool_calls: _Optional[_Iterable[_Union[RejectedToolCall, _Mapping]]] = ...) -> None: ...

class RejectedToolCall(_message.Message):
    __slots__ = ("id", "name", "raw_text", "reason", "arguments_json")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RAW_TEXT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_JSON_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    raw_text: str
    reason: str
    arguments_json: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., raw_text: _Optional[str] = ..., reason: _Optional[str] = ..., arguments_json: _Optional[str] = ...) -> None: ...

class StepResponse(_message.Message):
    __slots__ = ("observation", "reward", "done", "info_json")
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    INFO_JSON_FIELD_NUMBER: _ClassVar[int]
    observation: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    reward: float
    done: bool
    info_json: str
    def __init__(self, observation: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., reward: _Optional[float] = ..., done: _Optional[bool] = ..., info_json: _Optional[str] = ...) -> None: ...

class CloseRequest(_message.Message):
    __slots__ = ("episode_id",)
    EPISODE_ID_FIELD_NUMBER: _ClassVar[int]
    episode_id: str
    def __init__(self, episode_id: _Optional[str] = ...) -> None: ...

class CloseResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
