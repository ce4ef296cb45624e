"""Message limits shared by servers and channels (gRPC's default is 4 MiB)."""

MAX_MESSAGE_BYTES = 64 * 1024 * 1024


def message_options(max_bytes: int = MAX_MESSAGE_BYTES) -> list[tuple[str, int]]:
    return [("grpc.max_send_message_length", max_bytes), ("grpc.max_receive_message_length", max_bytes)]
