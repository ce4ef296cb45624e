"""One gloo rank of the sharded-save test (spawned by test_fsdp.py): FSDP2 train step, then save."""

import torch
import torch.distributed as dist

from meshrl.inputs.checkpoint import load_checkpoint, save_checkpoint
from tests.unit.inputs.checkpoint.helpers import tiny_model, train_step, trainer


def shard(model):
    from torch.distributed.fsdp import fully_shard

    for layer in model.model.layers:
        fully_shard(layer)
    fully_shard(model)
    return model


def run_rank(rank: int, world: int, init_file: str, run_dir: str, full_path: str) -> None:
    """Train one step on this rank's batch, save sharded, and (rank 0) the full reference state."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        model = shard(tiny_model(seed=0, attention_dropout=0.0))
        optimizer, scheduler = trainer(model)
        torch.manual_seed(rank)  # each rank its own batch
        train_step(model, optimizer, scheduler)
        save_checkpoint(
            run_dir,
            1,
            model=model,
            optimizer=optimizer,
            scheduler=scheduler,
            state={"world": world},
            config_hash="fsdp",
        )
        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        full_model, full_optim = get_state_dict(model, optimizer, options=options)
        fresh = shard(tiny_model(seed=9, attention_dropout=0.0))  # reload on the same 2 ranks
        f_opt, f_sched = trainer(fresh)
        state = load_checkpoint(run_dir, model=fresh, optimizer=f_opt, scheduler=f_sched)
        reloaded = get_state_dict(fresh, f_opt, options=options)[0]
        if rank == 0:
            same = all(torch.equal(reloaded[k], v) for k, v in full_model.items())
            torch.save(
                {"model": full_model, "optim": full_optim, "reload_equal": same, "reload_state": state}, full_path
            )
    finally:
        dist.destroy_process_group()
