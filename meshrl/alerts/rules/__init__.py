"""The built-in alert rules, one file per family; importing this registers them all."""

from meshrl.alerts.rules import (  # noqa: F401 (imported to register)
    drop_streak,
    entropy,
    env_drops,
    env_outage,
    health,
    kl,
    memory,
    outage,
    reward,
    stability,
    stall,
)
