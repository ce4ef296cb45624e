"""The resolved run config as flat `section.key` → text pairs: what trackers show as a run's
parameters (MLflow params, the W&B config keeps the nested form)."""

from __future__ import annotations

import json


def flat_config(tree: dict, prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flat_config(value, f"{name}."))
        else:
            flat[name] = value if isinstance(value, str) else json.dumps(value)
    return flat
