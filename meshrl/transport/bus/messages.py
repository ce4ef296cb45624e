"""Which protobuf message each stage carries (meshrl/topology.py names it), and parsing with a clear error."""

from google.protobuf.message import DecodeError, Message

from meshrl import topology
from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus.subjects import check_stage

STAGE_MESSAGES: dict[str, type[Message]] = {s.name: getattr(common_pb2, s.message) for s in topology.STAGE_TABLE}


class BadPayload(ValueError):
    """A message body is not the protobuf its stage carries (a poison message)."""


def message_type(stage: str) -> type[Message]:
    return STAGE_MESSAGES[check_stage(stage)]


def parse(stage: str, data: bytes) -> Message:
    cls = message_type(stage)
    msg = cls()
    try:
        msg.ParseFromString(data)
    except DecodeError as err:
        raise BadPayload(
            f"{len(data)}-byte body on stage {stage!r} is not a {cls.DESCRIPTOR.full_name}: {err}"
        ) from err
    return msg


def check_type(stage: str, message: Message) -> None:
    cls = message_type(stage)
    if not isinstance(message, cls):
        raise TypeError(f"stage {stage!r} carries {cls.DESCRIPTOR.full_name}, got {type(message).__name__}")
