"""meshrl: RL post-training for LLMs as a mesh of services.

The core package holds what every service shares (config, bus, rpc helpers, telemetry,
model and data loading, the algorithm registry, the CLI). Services live in
`meshrl.services.<name>` and never import each other.
"""

__version__ = "0.1.0"
