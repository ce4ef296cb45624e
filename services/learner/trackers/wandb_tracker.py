"""`WandbTracker`: the run in Weights & Biases, through wandb's own client.

offline (the default; there is no network here): wandb writes RUN_DIR/wandb/offline-run-*/
and `wandb sync` uploads it later; `wandb leet inspect --summary --json DIR` reads it back.
online needs WANDB_API_KEY in the learner's environment (wandb reads it; never the config).
What: the resolved config as the run's config, every step's finite numbers at that step
(eval/* included), the new samples.jsonl rows as a `samples` table, the final model's path in
the summary (`final_model_path`). wandb's caches go under RUN_DIR/wandb too, not $HOME. The
W&B run id is derived from the meshrl run id, so a resumed learner continues the same run.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import wandb

from meshrl.config import RunConfig
from meshrl.run_layout import RunDir
from meshrl.services.learner.metric_logger import finite_numbers
from meshrl.services.learner.trackers import TrackerUnavailable
from meshrl.services.learner.trackers.samples_tail import SamplesTail, as_table

log = logging.getLogger("meshrl.learner.trackers")


def wandb_run_id(run_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", run_id)[:64]


def wandb_root(run_dir) -> Path:
    """RUN_DIR/wandb, made; wandb's caches go under it too rather than $HOME."""
    root = Path(run_dir).resolve() / "wandb"
    root.mkdir(parents=True, exist_ok=True)
    for name in ("WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_CONFIG_DIR", "WANDB_ARTIFACT_DIR"):
        os.environ.setdefault(name, str(root / "cache"))
    return root


def client_settings(settings) -> wandb.Settings:
    """The client quiet and local: no console capture, system stats, code or git state."""
    return wandb.Settings(
        mode=settings.mode,
        console="off",
        x_disable_stats=True,
        save_code=False,
        disable_git=True,
        silent=True,
        init_timeout=settings.timeout_s,
    )


class WandbTracker:
    def __init__(self, cfg: RunConfig, run_id: str):
        self.wandb, settings = wandb, cfg.telemetry.wandb
        root = wandb_root(cfg.run.dir)
        try:
            self.run = wandb.init(
                project=settings.project,
                entity=settings.entity,
                name=settings.name or cfg.run.name,
                id=wandb_run_id(run_id),
                resume="allow",
                dir=str(root.parent),
                config=cfg.model_dump(mode="json"),
                settings=client_settings(settings),
            )
        except Exception as err:  # wandb raises its own errors (auth, init timeout, ...): all mean "cannot start"
            raise TrackerUnavailable(
                f"telemetry.trackers names wandb, but wandb.init failed ({type(err).__name__}: "
                f"{str(err)[:300]}): check telemetry.wandb (mode={settings.mode}; online needs "
                f"WANDB_API_KEY in the environment), or remove wandb from telemetry.trackers"
            ) from None
        self.samples = SamplesTail(RunDir(cfg.run.dir).samples)
        log.info("W&B: run %s (%s) in %s", self.run.id, settings.mode, self.run.dir)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        values: dict = finite_numbers(metrics)
        rows = self.samples.new_rows()
        if rows:
            columns, data = as_table(rows)
            values["samples"] = self.wandb.Table(columns=columns, data=data)
        self.run.log(values, step=step)

    def log_final_model(self, path: Path) -> None:
        self.run.summary["final_model_path"] = str(Path(path).resolve())

    def close(self) -> None:
        self.run.finish()
