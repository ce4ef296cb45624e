"""Which errors mean "this service could not start": one line on stderr, exit 2.

The same set for every service (each main used to catch its own):
  ConfigError      a bad key or value, a taken telemetry.metrics_port;
  ModelLoadError   model.path is not a model;
  DatasetError     data.* cannot be read or validated;
  CheckpointError  --resume finds no usable checkpoint;
  BusError         NATS cannot be reached or runs without JetStream;
  OSError          a missing file, a gRPC port in use, an external service that does not
                   answer (ConnectionError).
Only while starting: the same error raised once the service works is a failure (a
traceback, exit 1), which the launcher's restart policy handles.
"""

from __future__ import annotations

from meshrl.config import ConfigError
from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.data.rows import DatasetError
from meshrl.inputs.models.load import ModelLoadError
from meshrl.transport.bus.errors import BusError

# The exit code of a service that could not start: a restart would fail the same way, so the
# launcher's keeper (and the learner's rank group) treat it as final.
USER_ERROR_EXIT = 2


def startup_errors() -> tuple[type[BaseException], ...]:
    return (ConfigError, ModelLoadError, DatasetError, CheckpointError, BusError, OSError)


class StartupFailed(Exception):
    """One of startup_errors() while `service` started; str() is the line for stderr."""

    def __init__(self, service: str, cause: BaseException):
        super().__init__(f"{service} service: {cause}")
        self.service, self.cause = service, cause
