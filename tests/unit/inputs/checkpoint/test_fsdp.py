"""A checkpoint saved by 2 FSDP2 ranks (gloo) loads back on 2 ranks and on one unsharded process."""

import json

import pytest
import torch
import torch.multiprocessing as mp

from meshrl.inputs.checkpoint import load_checkpoint
from tests.unit.inputs.checkpoint.fsdp_worker import run_rank
from tests.unit.inputs.checkpoint.helpers import tiny_model, trainer


@pytest.mark.slow  # two spawned ranks: ≈40 s of CPU, over the unit budget
def test_sharded_save_loads_on_one_rank(tmp_path):
    run, full_path = tmp_path / "run", tmp_path / "full.pt"
    mp.spawn(run_rank, args=(2, str(tmp_path / "init"), str(run), str(full_path)), nprocs=2, join=True)
    ckpt = run / "checkpoints" / "step_1"
    manifest = json.loads((ckpt / "manifest.json").read_text())
    assert manifest["world_size"] == 2
    rng = {f"rng/rank_{r}.{ext}" for r in (0, 1) for ext in ("safetensors", "json")}
    whole = {"model/policy.safetensors", "optim/policy.safetensors", "optim/policy.json", "schedulers.json"}
    assert rng | whole <= set(manifest["files"]) and not any(n.endswith(".pt") for n in manifest["files"])
    want = torch.load(full_path, weights_only=False)
    assert want["reload_equal"] and want["reload_state"] == {"world": 2}  # 2 ranks → 2 ranks

    model = tiny_model(seed=5, attention_dropout=0.0)
    optimizer, scheduler = trainer(model)
    assert load_checkpoint(run, model=model, optimizer=optimizer, scheduler=scheduler) == {"world": 2}
    state = model.state_dict()
    for name, tensor in want["model"].items():
        assert torch.equal(state[name], tensor), name
    names = {p: n for n, p in model.named_parameters()}
    for param, slots in optimizer.state.items():
        saved = want["optim"]["state"][names[param]]
        assert torch.equal(slots["exp_avg"], saved["exp_avg"]), names[param]
        assert torch.equal(slots["exp_avg_sq"], saved["exp_avg_sq"]), names[param]
        assert float(slots["step"]) == 1.0
    assert scheduler.last_epoch == 1
