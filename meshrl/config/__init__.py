"""Typed run configuration: one schema, YAML plus `a.b=c` overrides. Never imports torch."""

from meshrl.errors import ConfigError
from meshrl.config.load import load_config, parse_overrides
from meshrl.config.schema import RunConfig

__all__ = ["ConfigError", "RunConfig", "load_config", "parse_overrides"]
