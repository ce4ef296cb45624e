"""The learner's checkpoints: what a step's checkpoint holds and how a run resumes from one.

A checkpoint (`RUN_DIR/checkpoints/step_N`, written by `meshrl.inputs.checkpoint`, atomically, with
a signed manifest of checksums; safetensors and JSON only, nothing pickled) holds the policy
and its AdamW state (whole, gathered from every rank), the critic and its optimizer when
there is one, every LR schedule, the RNG states, and the loop's own state as JSON: the step, the policy
version, the feeder's dataset cursor, draw counter and in-flight draws, the ids of every
group trained so far, and the drop counters. The resolved config goes with it, so a resume
under a config that changes what is trained (model, algorithm) is refused with the
differing keys named.

`restore(source)` accepts a run dir (its newest intact checkpoint; a corrupt newer one is
reported and skipped) or a `step_N` folder. It loads only what the user's checkpoint key
signed (meshrl.inputs.checkpoint.key); an older meshrl's checkpoint, or another user's, is
refused with the `meshrl checkpoints convert` command that adopts it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from meshrl.config import RunConfig
from meshrl.inputs.checkpoint import dist, hash_config, load_checkpoint, prune, save_checkpoint, tag
from meshrl.inputs.checkpoint.layout import MANIFEST, checkpoints_dir, step_dirs, step_name
from meshrl.inputs.checkpoint.parts import Part

log = logging.getLogger("meshrl.learner")


class LearnerCheckpoints:
    def __init__(self, cfg: RunConfig, policy, critic=None):
        self.run_dir, self.keep = Path(cfg.run.dir), cfg.learner.keep_checkpoints
        self.config = cfg.model_dump(mode="json")
        self.policy, self.critic = policy, critic

    def _extras(self) -> dict:
        if self.critic is None:
            return {}
        c = self.critic
        return {"critic": Part(c.model, c.optimizer, c.scheduler)}

    def save(self, step: int, state: dict, tag: str | None = None) -> Path:
        """Write `step_N` (blocking; run it in a thread), then prune beyond the newest K."""
        p = self.policy
        path = save_checkpoint(
            self.run_dir,
            step,
            model=p.model,
            optimizer=p.optimizer,
            scheduler=p.scheduler,
            extra_modules=self._extras(),
            state=state,
            config_hash=hash_config(self.config),
            config=self.config,
            tag=tag,
        )
        for gone in prune(self.run_dir, keep_last=self.keep) if dist.rank() == 0 else ():  # once, not per rank
            log.info("pruned checkpoint %s (keeping the newest %d and tagged ones)", gone, self.keep)
        log.info("checkpoint step %d written to %s", step, path)
        return path

    def restore(self, source: str | Path) -> dict:
        """Load weights, optimizer, schedules and RNG from `source`; return the loop's state."""
        p = self.policy
        state = load_checkpoint(
            source,
            model=p.model,
            optimizer=p.optimizer,
            scheduler=p.scheduler,
            extra_modules=self._extras(),
            new_config=self.config,
        )
        log.info(
            "resumed from %s: step %d, policy version %d, %d groups trained",
            source,
            state["step"],
            state["policy_version"],
            len(state["trained_group_ids"]),
        )
        return state

    def restore_if_any(self, source: str | Path) -> dict | None:
        """`restore`, except that a run dir with no finished checkpoint yet (a learner that died
        before its first save, perhaps mid-save: `step_N.tmp-PID` is ignored) starts afresh."""
        source = Path(source)
        if not (source / MANIFEST).exists() and not step_dirs(source):
            log.warning("no finished checkpoint in %s yet (partial saves ignored): starting at step 0", source)
            return None
        return self.restore(source)

    def path_of(self, step: int) -> Path:
        return checkpoints_dir(self.run_dir, must_exist=False) / step_name(step)

    def tag(self, step: int, name: str) -> Path:
        return tag(self.run_dir, step, name)
