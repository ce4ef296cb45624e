"""The built-in alert rules, one file per family; importing this registers them all."""
from meshrl.ops.alerts.rules import entropy, health, kl, memory, outage, reward, stability, stall  # noqa: F401
