"""FSDP2 on 2 gloo ranks gives the same losses and updated weights as 1 process, also after a
failed multi-update step rolled back from each rank's sharded snapshot."""

import torch
import torch.multiprocessing as mp

from meshrl.services.learner.train.fsdp import DistContext
from tests.unit.services.learner.train.fsdp_worker import run_rank, train


def test_two_fsdp_ranks_match_one_process(tmp_path):
    out = tmp_path / "rank0.pt"
    mp.spawn(run_rank, args=(2, str(tmp_path / "init"), str(out)), nprocs=2, join=True)
    sharded = torch.load(out, weights_only=False)
    single_metrics, single_state = train(DistContext())
    for got, want in zip(sharded["metrics"], single_metrics):
        for name in ("loss", "pg_loss", "grad_norm", "kl", "entropy", "reward", "clip_ratio/high"):
            assert abs(got[name] - want[name]) < 1e-5, (name, got[name], want[name])
    assert sharded["metrics"][0]["grad_norm"] > 0.5  # clipping (max 0.5) was exercised
    assert set(sharded["state"]) == set(single_state)
    for name, tensor in single_state.items():
        torch.testing.assert_close(sharded["state"][name], tensor, atol=1e-5, rtol=0, msg=name)
