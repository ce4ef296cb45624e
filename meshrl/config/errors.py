"""One error type for every bad config: it names the key, the bad value and what is allowed."""


class ConfigError(ValueError):
    """A config that cannot run. The message says which key, what was given, what is allowed."""
