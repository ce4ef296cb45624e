"""One rank of the FSDP2 equivalence test (spawned by test_fsdp.py; gloo on CPU)."""

import pytest
import torch
import torch.distributed as dist

from meshrl.algos import NonFiniteError
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.fsdp import DistContext, full_state_dict
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from tests.unit.services.learner.train.helpers import build_tiny_llama, random_batch
from tests.unit.services.learner.train.test_step_rollback import nan_loss_on_call

ROWS, STEPS = 8, 2
TRAINER = dict(micro_batch_size=2, ppo_epochs=2, optim={"lr": 1e-3, "max_grad_norm": 0.5})
ALGO = dict(
    advantage_estimator="grpo", policy_loss="ppo", loss_agg_mode="seq-mean-token-mean", kl_coef=0.04, entropy_coeff=0.01
)


def train(ctx: DistContext) -> tuple[list[dict], dict]:
    """STEPS steps on this rank's share of the same global batches, then one that fails in
    its second update (NaN loss on every rank) and must be rolled back from the sharded
    snapshot; (metrics, full weights)."""
    trainer = TrainerConfig(**TRAINER)
    step = TrainStep(
        build_policy(build_tiny_llama(), trainer, total_steps=10, dist=ctx), AlgorithmConfig(**ALGO), trainer, dist=ctx
    )
    share = ROWS // ctx.world_size  # whole groups of 4 per rank
    metrics = []
    mine = slice(ctx.rank * share, (ctx.rank + 1) * share)
    for i in range(STEPS):
        metrics.append(step(random_batch(ROWS, group_size=4, seed=i).select(mine), i))
    nan_loss_on_call(step, call=share // TRAINER["micro_batch_size"] + 1)
    with pytest.raises(NonFiniteError):
        step(random_batch(ROWS, group_size=4, seed=STEPS).select(mine), STEPS)
    return metrics, full_state_dict(step.policy.model, ctx)


def run_rank(rank: int, world: int, init_file: str, out_path: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        metrics, state = train(DistContext(rank=rank, world_size=world))
        if rank == 0:
            torch.save({"metrics": metrics, "state": state}, out_path)
    finally:
        dist.destroy_process_group()
