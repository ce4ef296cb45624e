"""An environment's answer bytes read as meshrl reads them: bad UTF-8 repaired, garbage named.

A protobuf string must be UTF-8 and the stock parser refuses a whole answer that has one bad
byte. `parse_answer(cls)` is a gRPC response deserializer that parses with the stock class
and, only when that fails, with a twin whose string fields are `bytes` (same wire format,
built once from env.proto's descriptor), decoding each with U+FFFD for bad bytes; it returns
(answer, repaired). For bytes that are no protobuf at all it returns (None, why): gRPC would
only log a deserializer's exception and hand the caller None. The rollout and `meshrl env
check` both read answers through it, so what one repairs or refuses the other does too.

    rpc = channel.unary_unary(path, request_serializer=..., response_deserializer=parse_answer(cls))
    answer, repaired_or_why = await rpc(request)
"""

from __future__ import annotations

from functools import cache

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from meshrl.api.env.v1 import env_pb2

LENIENT_PACKAGE = "meshrl.env.v1.lenient"


@cache
def lenient_class(name: str):
    """env.proto's message `name` with every string field read as bytes."""
    proto = descriptor_pb2.FileDescriptorProto()
    env_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name, proto.package = "meshrl/env/v1/env_lenient.proto", LENIENT_PACKAGE
    del proto.service[:]
    for message in proto.message_type:
        for field in message.field:
            if field.type == descriptor_pb2.FieldDescriptorProto.TYPE_STRING:
                field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
            if field.type_name:  # a message field: point it at the lenient twin
                field.type_name = field.type_name.replace(".meshrl.env.v1.", f".{LENIENT_PACKAGE}.")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{LENIENT_PACKAGE}.{name}"))


def _strict_copy(lenient, strict):
    """Copy `lenient` into the stock message `strict`, bytes → str with U+FFFD; returns strict."""
    for field, value in lenient.ListFields():
        target = strict.DESCRIPTOR.fields_by_name[field.name]
        if target.message_type is not None and target.is_repeated:
            for item in value:
                _strict_copy(item, getattr(strict, field.name).add())
        elif target.message_type is not None:
            _strict_copy(value, getattr(strict, field.name))
        elif target.type == target.TYPE_STRING:
            setattr(strict, field.name, value.decode("utf-8", errors="replace"))
        else:
            setattr(strict, field.name, value)
    return strict


def parse_answer(cls):
    """A gRPC response deserializer for `cls`: (answer, repaired_bad_utf8), or (None, why)."""

    def parse(data: bytes):
        try:
            return cls.FromString(data), False
        except DecodeError as err:
            stock_error = err
        try:
            return _strict_copy(lenient_class(cls.DESCRIPTOR.name).FromString(data), cls()), True
        except DecodeError:
            return None, f"{len(data)} bytes that are no {cls.DESCRIPTOR.name} ({stock_error})"

    return parse
