"""Checkpoints for the learner: atomic save, signed and verified load, retention, rollback, HF export.

    path = save_checkpoint(run_dir, step, model=m, optimizer=o, scheduler=s,
                           extra_modules={"critic": (critic, critic_opt)},
                           state={"cursor": 17, "policy_version": 3}, config_hash=h, config=cfg)
    state = load_checkpoint(run_dir, model=m, optimizer=o, scheduler=s, new_config=cfg)

Layout and guarantees: see `meshrl.inputs.checkpoint.layout`, `.save`, `.retention`; the key
manifests are signed with, `.key`; older checkpoints, `.legacy` and `.convert`. Nothing is
unpickled on any load path. The library never imports `meshrl.services`: it takes modules,
optimizers, schedulers and dicts.
"""

import importlib

# Lazy: `meshrl --help` and the checkpoint CLI's parsers must not pay for importing torch.
_HOMES = {
    "DEFAULT_KEYS": "compat",
    "check_compatible": "compat",
    "convert_checkpoint": "convert",
    "CheckpointError": "errors",
    "IncompatibleCheckpointError": "errors",
    "hash_config": "manifest",
    "load_checkpoint": "load",
    "read_config": "load",
    "resolve_checkpoint": "load",
    "read_manifest": "manifest",
    "verify_checkpoint": "manifest",
    "Part": "parts",
    "prune": "retention",
    "rollback": "retention",
    "tag": "retention",
    "untag": "retention",
    "save_checkpoint": "save",
    "CheckpointInfo": "scan",
    "latest_good_checkpoint": "scan",
    "list_checkpoints": "scan",
    "export_hf": "export",
}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'meshrl.inputs.checkpoint' has no attribute {name!r}")
    return getattr(importlib.import_module(f"meshrl.inputs.checkpoint.{_HOMES[name]}"), name)


__all__ = [
    "CheckpointError",
    "CheckpointInfo",
    "DEFAULT_KEYS",
    "IncompatibleCheckpointError",
    "Part",
    "check_compatible",
    "convert_checkpoint",
    "export_hf",
    "hash_config",
    "latest_good_checkpoint",
    "list_checkpoints",
    "load_checkpoint",
    "prune",
    "read_config",
    "read_manifest",
    "resolve_checkpoint",
    "rollback",
    "save_checkpoint",
    "tag",
    "untag",
    "verify_checkpoint",
]
