"""Local TCP ports: one free port on this host, for servers that need a concrete number.

    from meshrl.transport.ports import free_port
    port = free_port()            # e.g. 41873, free on 127.0.0.1 a moment ago

Simplification: the port is free when we look; another process may take it before the
caller binds it. Servers that can bind port 0 themselves (gRPC, Prometheus) should; this
is for values that must be known before the server starts (a config written for several
processes, a nats-server command line, a torch.distributed rendezvous).
"""
import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at `host` right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
