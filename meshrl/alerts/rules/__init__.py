"""The built-in alert rules, one file per family; importing this registers them all."""
from meshrl.alerts.rules import (drop_streak, entropy, env_drops, env_outage, health, kl,  # noqa: F401
                                 memory, outage, reward, stability, stall)
