from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TokenSequence(_message.Message):
    __slots__ = ("id", "prompt_token_ids", "response_token_ids")
    ID_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_TOKEN_IDS_FIELD_NUMBER: _ClassVar[int]
    id: str
    prompt_token_ids: bytes
    response_token_ids: bytes
    def __init__(self, id: _Optional[str] = ..., prompt_token_ids: _Optional[bytes] = ..., response_token_ids: _Optional[bytes] = ...) -> None: ...

class ComputeLogprobsRequest(_message.Message):
    __slots__ = ("sequences",)
    SEQUENCES_FIELD_NUMBER: _ClassVar[int]
    sequences: _containers.RepeatedCompositeFieldContainer[TokenSequence]
    def __init__(self, sequences: _Optional[_Iterable[_Union[TokenSequence, _Mapping]]] = ...) -> None: ...

class SequenceLogprobs(_message.Message):
    __slots__ = ("id", "logprobs", "sum_logprob")
    ID_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    SUM_LOGPROB_FIELD_NUMBER: _ClassVar[int]
    id: str
    logprobs: bytes
    sum_logprob: float
    def __init__(self, id: _Optional[str] = ..., logprobs: _Optional[bytes] = ..., sum_logprob: _Optional[float] = ...) -> None: ...

class ComputeLogprobsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[SequenceLogprobs]
    def __init__(self, results: _Optional[_Iterable[_Union[SequenceLogprobs, _Mapping]]] = ...) -> None: ...
