"""A tracker's server answers before anything starts: an MLflow tracking server named by an
http(s) URI must accept a connection, or the learner would fail on its first metric after NATS,
vLLM and every service had started. One connection attempt, `TRACKER_PROBE_S` at most.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from meshrl.config.schema import RunConfig

TRACKER_PROBE_S = 3.0


def tracker_problems(cfg: RunConfig, timeout_s: float = TRACKER_PROBE_S) -> list[str]:
    """An MLflow tracking server named by http(s) URI that does not accept a connection."""
    trackers = cfg.telemetry.trackers or []
    uri = cfg.telemetry.mlflow.tracking_uri if "mlflow" in trackers else None
    if not uri or urlsplit(uri).scheme not in ("http", "https"):
        return []
    parts = urlsplit(uri)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout_s).close()
    except OSError as err:
        return [
            f"telemetry.mlflow.tracking_uri={uri}: no server answers at {parts.hostname}:{port} "
            f"({err.strerror or type(err).__name__}); start it (`mlflow server --port {port}`), fix the URI, "
            f"or drop mlflow from telemetry.trackers"
        ]
    return []
