"""`meshrl health ADDRESS [--service NAME] [--timeout S]`: is this gRPC server SERVING?

Asks the server's `grpc.health.v1.Health/Check` (every meshrl gRPC server has it, see
meshrl.transport.rpc.server) and exits 0 when the answer is SERVING, 1 for any other answer
(NOT_SERVING while draining, SERVICE_UNKNOWN for a wrong --service), 2 when nothing answers
within --timeout. The container health check of deploy/ (compose, `docker run`; the
learner's probe in Kubernetes, whose gRPC server listens on 127.0.0.1 only):

    meshrl health 127.0.0.1:50051
    meshrl health reward:50052 --service meshrl.reward.v1.RewardService --timeout 2
    python -m meshrl.cli.health 127.0.0.1:50051      # the same, without the CLI's imports

TLS: the same MESHRL_GRPC_TLS_* environment as the services (meshrl.transport.rpc.mesh_tls):
with MESHRL_GRPC_TLS_CA_FILE set the check is TLS, presenting MESHRL_GRPC_TLS_CERT_FILE /
_KEY_FILE when the servers require client certificates. A probe in the service's own
container therefore needs no flags.
"""

from __future__ import annotations

import argparse
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from meshrl.cli import about
from meshrl.transport.rpc import mesh_tls


def add_parser(sub) -> None:
    p = sub.add_parser(
        "health", help=about("health"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(p)
    p.set_defaults(func=run)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("address", help="host:port of the gRPC server, e.g. 127.0.0.1:50051")
    p.add_argument("--service", default="", help="a registered service's full name ('' = the whole server)")
    p.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer (default 3)")


def check(address: str, service: str = "", timeout: float = 3.0) -> tuple[int, str]:
    """(exit code, one line saying why) for one Health/Check call."""
    credentials = mesh_tls.client_credentials()
    channel = (
        grpc.secure_channel(address, credentials, options=mesh_tls.client_options())
        if credentials
        else grpc.insecure_channel(address)
    )
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as err:
            code = err.code()
            if code == grpc.StatusCode.NOT_FOUND:
                return 1, f"{address}: SERVICE_UNKNOWN {service!r}"
            return 2, f"{address}: no answer within {timeout:g} s ({code.name}: {err.details()})"
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    return (0 if reply.status == health_pb2.HealthCheckResponse.SERVING else 1), f"{address}: {status}"


def run(args: argparse.Namespace) -> int:
    code, line = check(args.address, args.service, args.timeout)
    print(line, file=sys.stdout if code == 0 else sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m meshrl.cli.health", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
