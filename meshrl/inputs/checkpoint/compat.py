"""Refuse to resume a checkpoint under a config that changes what is being trained.

A checkpoint of one model or algorithm resumed with another would either fail deep inside
loading or, worse, silently train something else. The keys compared are dotted paths into
the resolved config dict (`model.path`, `algorithm.policy_loss`, ...); knobs such as the
learning rate or `kl_coef` may change between a save and a resume.
"""

from __future__ import annotations

from meshrl.inputs.checkpoint.errors import IncompatibleCheckpointError

DEFAULT_KEYS = (
    "model.path",
    "model.gguf_file",
    "algorithm.advantage_estimator",
    "algorithm.policy_loss",
    "algorithm.critic.enabled",
    "algorithm.offline",
)
ABSENT = "<absent>"


def lookup(config: dict, dotted: str):
    """config["a"]["b"] for "a.b"; ABSENT when any level is missing."""
    node = config
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return ABSENT
        node = node[key]
    return node


def check_compatible(checkpoint_config: dict, new_config: dict, keys: tuple[str, ...] = DEFAULT_KEYS) -> None:
    """Raise IncompatibleCheckpointError naming every differing key with both values."""
    diffs = [(k, lookup(checkpoint_config, k), lookup(new_config, k)) for k in keys]
    diffs = [d for d in diffs if d[1] != d[2]]
    if diffs:
        detail = "; ".join(f"{k}: checkpoint has {a!r}, new config has {b!r}" for k, a, b in diffs)
        raise IncompatibleCheckpointError(
            f"refusing to resume: the config differs from the checkpoint's in {detail}. "
            f"Resume with the checkpoint's values, or start a new run dir (a model or "
            f"algorithm change is a new run)"
        )
