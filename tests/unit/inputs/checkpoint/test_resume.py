"""A resumed model + optimizer + scheduler (+ RNG) continues bit-identically."""

import json

import pytest
import torch

from meshrl.inputs.checkpoint import CheckpointError, load_checkpoint, read_manifest, save_checkpoint
from tests.unit.inputs.checkpoint.helpers import tiny_model, train_step, trainer, weights


def _train_save_continue(run):
    """Train 2 steps, save at step 2, train 2 more: (losses of steps 3-4, final weights)."""
    torch.manual_seed(0)
    model = tiny_model(seed=0)
    optimizer, scheduler = trainer(model)
    for _ in range(2):
        train_step(model, optimizer, scheduler)
    save_checkpoint(
        run,
        2,
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        state={"cursor": 4, "trained_groups": ["g1", "g2"], "policy_version": 2},
        config_hash="abc",
    )
    losses = [train_step(model, optimizer, scheduler) for _ in range(2)]
    return losses, weights(model), scheduler.get_last_lr()


def _fresh_resume(run, restore_rng=True):
    model = tiny_model(seed=123)  # different init: everything must come from the checkpoint
    optimizer, scheduler = trainer(model)
    torch.manual_seed(999)  # different RNG: must be restored too
    state = load_checkpoint(run, model=model, optimizer=optimizer, scheduler=scheduler, restore_rng=restore_rng)
    losses = [train_step(model, optimizer, scheduler) for _ in range(2)]
    return state, losses, weights(model), scheduler.get_last_lr()


def test_resume_is_bit_identical(tmp_path):
    want_losses, want_weights, want_lr = _train_save_continue(tmp_path)
    state, losses, got_weights, lr = _fresh_resume(tmp_path)
    assert state == {"cursor": 4, "trained_groups": ["g1", "g2"], "policy_version": 2}
    assert all(torch.equal(a, b) for a, b in zip(losses, want_losses)), (losses, want_losses)
    assert set(got_weights) == set(want_weights)
    assert all(torch.equal(got_weights[k], want_weights[k]) for k in want_weights)
    assert lr == want_lr == [1e-2]  # warmup (s+1)/3 reached 1.0 at step 2


def test_without_rng_restore_the_run_diverges(tmp_path):
    """Control: the test above needs the RNG states (batch draws + attention dropout)."""
    want_losses, _, _ = _train_save_continue(tmp_path)
    _, losses, _, _ = _fresh_resume(tmp_path, restore_rng=False)
    assert not torch.equal(losses[0], want_losses[0])


def test_extra_modules_round_trip(tmp_path):
    """A critic with its own AdamW and schedule is saved and loaded beside the policy."""
    torch.manual_seed(0)
    policy, critic = tiny_model(seed=0), torch.nn.Linear(4, 1)
    p_opt, p_sched = trainer(policy)
    c_opt, c_sched = trainer(critic, lr=0.5)
    critic(torch.ones(2, 4)).sum().backward()
    c_opt.step(), c_sched.step()
    save_checkpoint(
        tmp_path,
        1,
        model=policy,
        optimizer=p_opt,
        scheduler=p_sched,
        extra_modules={"critic": (critic, c_opt, c_sched)},
        config_hash="x",
    )
    critic2 = torch.nn.Linear(4, 1)
    c_opt2, c_sched2 = trainer(critic2, lr=0.5)
    policy2 = tiny_model(seed=5)
    load_checkpoint(tmp_path, model=policy2, optimizer=None, extra_modules={"critic": (critic2, c_opt2, c_sched2)})
    assert torch.equal(critic2.weight, critic.weight) and torch.equal(critic2.bias, critic.bias)
    assert torch.equal(c_opt2.state[critic2.weight]["exp_avg"], c_opt.state[critic.weight]["exp_avg"])
    assert c_sched2.last_epoch == 1 and c_sched2.get_last_lr() == pytest.approx([0.5 * 2 / 3])
    assert read_manifest(tmp_path / "checkpoints/step_1")["parts"] == ["critic", "policy"]


def test_manifest_lists_every_file_with_size(tmp_path):
    torch.manual_seed(0)
    model = tiny_model()
    optimizer, scheduler = trainer(model)
    path = save_checkpoint(
        tmp_path,
        7,
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        state={"a": 1},
        config_hash="cafe",
        config={"model": {"path": "m"}},
        tag="first",
    )
    manifest = json.loads((path / "manifest.json").read_text())
    assert path == tmp_path / "checkpoints" / "step_7"
    assert manifest["step"] == 7 and manifest["config_hash"] == "cafe"
    assert manifest["meshrl_version"] == "0.1.0" and manifest["world_size"] == 1
    assert {
        "state.json",
        "config.json",
        "schedulers.json",
        "rng/rank_0.safetensors",
        "rng/rank_0.json",
        "model/policy.safetensors",
        "optim/policy.safetensors",
        "optim/policy.json",
        "hf_config/config.json",
    } <= set(manifest["files"])
    for name, meta in manifest["files"].items():
        assert (path / name).stat().st_size == meta["size"] and len(meta["sha256"]) == 64
    assert (path / "state.json").read_text() == '{\n  "a": 1\n}\n'
    assert json.loads((path / "tags.json").read_text()) == {"tags": ["first"]}
    assert not list((tmp_path / "checkpoints").glob("*.tmp-*"))


def test_state_must_be_json_able(tmp_path):
    model = tiny_model()
    optimizer, _ = trainer(model)
    with pytest.raises(CheckpointError, match="must be JSON-able.*tolist"):
        save_checkpoint(tmp_path, 1, model=model, optimizer=optimizer, state={"t": torch.ones(2)}, config_hash="x")
    assert not (tmp_path / "checkpoints").exists()  # failed before writing anything


def test_optimizer_missing_from_checkpoint_is_a_clear_error(tmp_path):
    model = tiny_model()
    save_checkpoint(tmp_path, 1, model=model, optimizer=None, config_hash="x")
    model2 = tiny_model(seed=3)
    optimizer2, _ = trainer(model2)
    with pytest.raises(CheckpointError, match="has no .policy.optim.*optimizer=None"):
        load_checkpoint(tmp_path, model=model2, optimizer=optimizer2)
    load_checkpoint(tmp_path, model=model2)  # weights only works
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), model2.parameters()))
