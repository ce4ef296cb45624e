"""What a run will do, in numbers: the batch arithmetic, which services run, and (`meshrl
plan CONFIG [key=value ...] [--device NAME]`) the memory each one needs per device.

    sequences per step      = learner.prompts_per_step × rollout.sampling.group_size
    per optimizer step      = sequences / trainer.mini_batches
    micro-batches           = ceil(per optimizer step / trainer.micro_batch_size)
    optimizer steps / step  = trainer.ppo_epochs × trainer.mini_batches
    in-flight bound         = learner.max_groups_in_flight or prompts_per_step × (max_staleness + 1)
"""

from __future__ import annotations

import math

from meshrl.cli import about
from meshrl.config.load import load_config
from meshrl.config.schema import RunConfig
from meshrl.errors import ConfigError


def _batch_lines(cfg: RunConfig) -> list[str]:
    prompts, group = cfg.learner.prompts_per_step, cfg.rollout.sampling.group_size
    sequences = prompts * group
    minis, micro = cfg.trainer.mini_batches, cfg.trainer.micro_batch_size
    per_opt = sequences // minis
    n_micro = math.ceil(per_opt / micro)
    ragged = "" if per_opt % micro == 0 else f" (the last has {per_opt % micro})"
    return [
        f"  sequences per step     {prompts} prompts × {group} samples = {sequences}",
        f"  per optimizer step     {sequences} / {minis} mini-batches = {per_opt} sequences",
        f"  micro-batches          {n_micro} of ≤{micro} per optimizer step{ragged}",
        f"  optimizer steps        {cfg.trainer.ppo_epochs} epochs × {minis} = "
        f"{cfg.trainer.ppo_epochs * minis} per training step; {cfg.learner.steps} steps",
    ]


def _flight_lines(cfg: RunConfig) -> list[str]:
    staleness = cfg.learner.max_staleness
    mode = "on-policy (synchronous)" if staleness == 0 else f"off-policy by at most {staleness} versions"
    source = (
        "learner.max_groups_in_flight"
        if cfg.learner.max_groups_in_flight
        else f"{cfg.learner.prompts_per_step} × ({staleness} + 1)"
    )
    return [f"  groups in flight       ≤{cfg.learner.in_flight_bound} ({source}); max_staleness={staleness}: {mode}"]


def _service_lines(cfg: RunConfig) -> list[str]:
    algo = cfg.algorithm
    ref_why = f"reference.enabled={cfg.reference.enabled}, kl_coef={algo.kl_coef}, offline={algo.offline}"
    lines = []
    if algo.offline:
        lines.append("  rollout, reward         off (offline: trains on preference pairs)")
    else:
        lines.append(f"  rollout                ×{cfg.rollout.replicas}")
        lines.append(
            f"  reward                 ×{cfg.reward.replicas}: "
            + ", ".join(f"{c.name}({c.kind})×{c.weight:g}" for c in cfg.reward.components)
        )
    if cfg.environment is not None and not algo.offline:
        lines.append(environment_line(cfg.environment))
    lines.append(
        f"  reference              {'×' + str(cfg.reference.replicas) if cfg.reference_enabled else 'off'} ({ref_why})"
    )
    lines.append(f"  critic                 {'on' if algo.critic.enabled else 'off'} (algorithm.critic.enabled)")
    lines.append(
        f"  learner                ×1: {algo.name} = {algo.advantage_estimator} "
        f"advantages + {algo.policy_loss} loss, {algo.loss_agg_mode}"
    )
    return lines


def environment_line(env) -> str:
    """Where the episodes' environment runs: replicas meshrl launches (a built-in or an adapter),
    or a service at an address nothing launches."""
    what = env.adapter or (f"built-in {env.builtin}" if env.builtin else "your service")
    where = f"×{env.replicas}" if env.launched else f"at {env.address} (not launched)"
    return f"  environment            {where}: {env.name} ({what})"


def describe_plan(cfg: RunConfig) -> str:
    """A human summary printed by `meshrl train --dry-run` after the resolved config."""
    return "\n".join(["batch arithmetic:", *_batch_lines(cfg), *_flight_lines(cfg), "services:", *_service_lines(cfg)])


def add_parser(sub) -> None:
    p = sub.add_parser("plan", help=about("plan"))
    p.add_argument("config", help="the run config (YAML)")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides")
    p.add_argument(
        "--device",
        default=None,
        help="check that each service fits this device: cpu, h200, h100-80gb, a100-80gb, "
        "a100-40gb, l40s, a10g, l4, rtx4090",
    )
    p.set_defaults(func=run, accepts_extra_overrides=True)


def run(args) -> int:
    """Print the plan; exit 1 when a service does not fit the named device."""
    from meshrl.plan.report import memory_plan, plan_lines  # lazy: it builds the model on torch's meta device

    cfg = load_config(args.config, args.overrides)
    try:
        plan = memory_plan(cfg, device=args.device)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    print(describe_plan(cfg))
    print("\n".join(plan_lines(plan)))
    return 1 if plan.warnings and plan.device else 0
