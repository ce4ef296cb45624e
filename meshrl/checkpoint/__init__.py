"""Checkpoints for the learner: atomic save, verified load, retention, rollback, HF export.

    path = save_checkpoint(run_dir, step, model=m, optimizer=o, scheduler=s,
                           extra_modules={"critic": (critic, critic_opt)},
                           state={"cursor": 17, "policy_version": 3}, config_hash=h, config=cfg)
    state = load_checkpoint(run_dir, model=m, optimizer=o, scheduler=s, new_config=cfg)

Layout and guarantees: see `meshrl.checkpoint.layout`, `.save`, `.retention`. The library
never imports `meshrl.services`: it takes modules, optimizers, schedulers and dicts.
"""
from meshrl.checkpoint.compat import DEFAULT_KEYS, check_compatible
from meshrl.checkpoint.errors import CheckpointError, IncompatibleCheckpointError
from meshrl.checkpoint.hashing import hash_config
from meshrl.checkpoint.load import load_checkpoint, read_config, resolve_checkpoint
from meshrl.checkpoint.manifest import read_manifest, verify_checkpoint
from meshrl.checkpoint.parts import Part
from meshrl.checkpoint.retention import prune, rollback, tag, untag
from meshrl.checkpoint.save import save_checkpoint
from meshrl.checkpoint.scan import CheckpointInfo, latest_good_checkpoint, list_checkpoints


def export_hf(*args, **kwargs):
    """See `meshrl.checkpoint.export.export_hf` (imported lazily: it needs transformers)."""
    from meshrl.checkpoint.export import export_hf as _export_hf
    return _export_hf(*args, **kwargs)


__all__ = ["CheckpointError", "CheckpointInfo", "DEFAULT_KEYS", "IncompatibleCheckpointError",
           "Part", "check_compatible", "export_hf", "hash_config", "latest_good_checkpoint",
           "list_checkpoints", "load_checkpoint", "prune", "read_config", "read_manifest",
           "resolve_checkpoint", "rollback", "save_checkpoint", "tag", "untag",
           "verify_checkpoint"]
