"""Typed run configuration: one schema, YAML plus `a.b=c` overrides. Never imports torch."""

from meshrl.config.load import load_config, parse_overrides
from meshrl.config.schema import RunConfig
from meshrl.errors import ConfigError

__all__ = ["ConfigError", "RunConfig", "load_config", "parse_overrides"]
