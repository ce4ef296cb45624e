"""Where this process listens, the address it tells others to use, and a free local port.

    MESHRL_BIND_HOST       interface the gRPC servers listen on (default 127.0.0.1: nothing
                           beyond this host can connect, which is right for a one-host run)
    MESHRL_ADVERTISE_HOST  host put in the run KV and in URLs for other hosts to dial (default:
                           the bind host; required when binding every interface, because
                           "0.0.0.0" is no address another host can reach); the value
                           "@ip" means this host's own address (its hostname resolved, as
                           /etc/hosts gives it in a container)

In Kubernetes: MESHRL_BIND_HOST=0.0.0.0 and MESHRL_ADVERTISE_HOST from the pod's IP (the
downward API's status.podIP); on one machine leave both unset.

    from meshrl.addresses import free_port
    port = free_port()            # e.g. 41873, free on 127.0.0.1 a moment ago

Simplification: the port is free when we look; another process may take it before the
caller binds it. Servers that can bind port 0 themselves (gRPC, Prometheus) should; this
is for values that must be known before the server starts (a config written for several
processes, a nats-server command line, a torch.distributed rendezvous).
"""

import os
import socket

BIND_ENV = "MESHRL_BIND_HOST"
ADVERTISE_ENV = "MESHRL_ADVERTISE_HOST"
LOOPBACK = "127.0.0.1"
WILDCARDS = {"0.0.0.0", "::", "[::]", ""}


class AddressError(ValueError):
    pass


def bind_host() -> str:
    return os.environ.get(BIND_ENV, LOOPBACK).strip() or "0.0.0.0"


def advertise_host() -> str:
    advertised = os.environ.get(ADVERTISE_ENV, "").strip()
    if advertised == "@ip":
        return own_ip()
    if advertised:
        return advertised
    bound = bind_host()
    if bound in WILDCARDS:
        raise AddressError(
            f"{BIND_ENV}={bound} listens on every interface, which is no address another "
            f"service can dial; set {ADVERTISE_ENV} to this host's reachable address "
            f"(in Kubernetes: the pod IP from status.podIP)"
        )
    return bound


def host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def own_ip() -> str:
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError as err:
        raise AddressError(
            f"{ADVERTISE_ENV}=@ip: cannot resolve this host's name "
            f"{socket.gethostname()!r} ({err}); set the address itself"
        ) from None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at `host` right now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
