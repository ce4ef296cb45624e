"""The learner's training step (imports as `meshrl.services.learner.train`).

    policy = build_policy(model, trainer_cfg, total_steps=N, dist=init_distributed())
    critic = build_critic(ValueModel.from_causal_lm(model), algo.critic, trainer_cfg, ...)  # PPO
    step = TrainStep(policy, algo_cfg, trainer_cfg, critic=critic, dist=ctx)
    metrics = step(rollout_batch, step_number)          # online RL (PPO/GRPO/DAPO/GSPO/...)
    metrics = DPOStep(policy, algo_cfg, trainer_cfg)(preference_batch, step_number)  # DPO

Files: `policy.py` (model, AdamW, warmup-cosine, precision), `critic.py` (value head, clipped
value loss), `step.py` (the RL step), `dpo.py` (the DPO step), `fsdp.py` (FSDP2, ranks,
all-reduce, full state dict), `metrics.py` (metric reduction, phase timers).
"""
