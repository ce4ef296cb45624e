"""Keep gRPC's own C-core log lines (`I1207 ... ssl_transport_security.cc ... Handshake failed`)
off a check's stderr: the kits (`meshrl env check`, `meshrl reward check`, `meshrl doctor`)
turn every failed connection into a FAIL row naming the cause and the fix, so those lines
only bury it. A user who set GRPC_VERBOSITY or GRPC_TRACE (to debug gRPC itself) keeps them.
C-core reads the variables when it starts, at the first channel, so this runs before one."""

from __future__ import annotations

import os


def quiet_grpc_logs() -> None:
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    os.environ.setdefault("GRPC_TRACE", "")
