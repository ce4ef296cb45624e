"""The built-in alert rules, one file per family; importing this registers them all."""
from meshrl.alerts.rules import (entropy, env_drops, health, kl, memory, outage,  # noqa: F401
                                     reward, stability, stall)
