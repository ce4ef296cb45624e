"""run_doctor: every check in order, each independent (one failing never stops the others).

Keys (for `skip=`): model, data, accelerators, gloo, nats-binary, nats, disk, transformers,
vllm, rewards, environment.
Without a config only the machine checks run (the config ones are skipped). The config's own
checks come first (it loads; the model takes its settings; the data is there) and a failure
there stops the doctor before it starts anything (no NATS, no vLLM import): the rest are
skipped, and `meshrl doctor` exits 2 as `meshrl train` would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from meshrl.cli.doctor.check import Check, failed, passed, run_check, skipped
from meshrl.cli.doctor.checks_data import check_data
from meshrl.cli.doctor.checks_disk import check_disk
from meshrl.cli.doctor.checks_environment import check_environment
from meshrl.cli.doctor.checks_model import check_model
from meshrl.cli.doctor.checks_nats import check_nats
from meshrl.cli.doctor.checks_reward import check_external_rewards
from meshrl.cli.doctor.checks_system import check_accelerators, check_nats_binary, check_transformers, check_vllm
from meshrl.cli.doctor.gloo import check_gloo
from meshrl.config import ConfigError, load_config

CONFIG_CHECKS = ("model", "data")  # what the config alone decides: first, and a failure stops the rest
CHECKS = {  # key → (display name, function); order is the table's order
    "model": ("model", check_model),
    "data": ("data", check_data),
    "accelerators": ("accelerators", check_accelerators),
    "gloo": ("gloo all-reduce (2 ranks)", check_gloo),
    "nats-binary": ("nats-server binary", check_nats_binary),
    "nats": ("nats + jetstream", check_nats),
    "disk": ("disk for checkpoints", check_disk),
    "transformers": ("transformers + torch", check_transformers),
    "vllm": ("vllm importable", check_vllm),
    "rewards": ("external rewards", check_external_rewards),
    "environment": ("environment", check_environment),
}


@dataclass
class DoctorContext:
    config: object | None = None  # meshrl.config.RunConfig
    nats_url: str | None = None
    keep_checkpoints: int = 3
    reward_timeout_s: float = 2.0
    parameters: int | None = None  # set by the model check, used by the disk check


def load_config_check(config_path) -> tuple[Check, object | None]:
    if config_path is None:
        return skipped("config", "no config given: only machine checks run", config=True), None
    try:
        cfg = load_config(config_path)
    except ConfigError as err:
        fix = "fix the key named above (`meshrl train CONFIG --dry-run` shows the resolved config)"
        return failed("config", f"{config_path}: {err}", fix, config=True), None
    return passed("config", f"{config_path} (run {cfg.run.name}, algorithm {cfg.algorithm.name})", config=True), cfg


def run_doctor(
    config_path=None,
    *,
    nats_url: str | None = None,
    skip: Iterable[str] = (),
    keep_checkpoints: int | None = None,
    reward_timeout_s: float = 2.0,
) -> list[Check]:
    """Run every check not in `skip`; returns the results in table order.
    `keep_checkpoints` None = the config's `learner.keep_checkpoints` (3 without a config)."""
    skip = set(skip)
    if unknown := skip - set(CHECKS):
        raise ValueError(f"unknown doctor check(s) {sorted(unknown)}; known: {', '.join(CHECKS)}")
    config_check, cfg = load_config_check(config_path)
    if keep_checkpoints is None:
        keep_checkpoints = cfg.learner.keep_checkpoints if cfg is not None else 3
    ctx = DoctorContext(cfg, nats_url, keep_checkpoints, reward_timeout_s)
    results = [config_check]
    for key, (name, fn) in CHECKS.items():
        if key in skip or (key not in CONFIG_CHECKS and config_refused(results)):
            why = "skipped on request" if key in skip else "the config is refused above: fix it first"
            results.append(skipped(name, why))
            continue
        rows = run_check(name, fn, ctx)
        for row in rows:
            row.config = key in CONFIG_CHECKS
        results.extend(rows)
    return results


def config_refused(results: list[Check]) -> bool:
    """A failed config row: what `meshrl train` would refuse before starting anything."""
    return any(r.config and not r.ok for r in results)
