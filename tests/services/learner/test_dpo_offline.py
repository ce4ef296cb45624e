"""DPO through the learner's offline loop, with reference log-probs from a real
ReferenceService on a real gRPC port (tiny model on both sides)."""

from pathlib import Path

import pytest

from meshrl.config import load_config
from meshrl.inputs.data.arithmetic import preference_pairs
from meshrl.inputs.data.load import write_rows
from meshrl.services.learner.assemble import offline
from meshrl.services.learner.control import LearnerState
from meshrl.services.reference.scorer import ReferenceScorer
from meshrl.services.reference.servicer import start_reference_server
from meshrl.transport.rpc import stop_server


@pytest.fixture
async def reference(tiny_model_dir):
    from meshrl.inputs.models.load import load_causal_lm

    scorer = ReferenceScorer(load_causal_lm(tiny_model_dir), micro_batch_size=8)
    server, port = await start_reference_server(scorer, port=0, host="127.0.0.1")
    yield port
    await stop_server(server, grace=0)


def dpo_config(tmp_path, tiny_model_dir, reference, name="run", pairs=16, per_step=16):
    data = tmp_path / "pairs.jsonl"
    if not data.exists():
        write_rows(data, preference_pairs(pairs, seed=0))
    (tmp_path / name).mkdir()
    return load_config(
        base={
            "run": {"name": "dpo", "dir": str(tmp_path / name)},
            "model": {"path": str(tiny_model_dir)},
            "data": {"train": str(data), "max_prompt_tokens": 128},
            "algorithm": {"preset": "dpo", "beta": 0.5},
            "reference": {"grpc_port": reference},
            "learner": {"steps": 8, "prompts_per_step": per_step, "checkpoint_every": 4},
            "trainer": {
                "micro_batch_size": 16,
                "optim": {"lr": 3e-3},
                "precision": "fp32",
            },  # the reference runs fp32: step 0 must match it exactly
        }
    )


async def test_dpo_raises_margin_on_training_pairs(tmp_path, tiny_model_dir, reference, bus, run_id):
    cfg = dpo_config(tmp_path, tiny_model_dir, reference)
    built = await offline(cfg, bus, run_id, LearnerState(run_id=run_id, total_steps=8))
    await built.loop.run()
    built.loop.logger.close()
    import json

    rows = [json.loads(x) for x in (Path(cfg.run.dir) / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 8
    # Same 16 pairs every step: before any update the policy IS the reference (margin 0);
    # DPO must open a positive margin and lower the loss below log 2.
    assert abs(rows[0]["rewards/margins"]) < 1e-4
    assert rows[-1]["rewards/margins"] > 0.1
    assert rows[-1]["loss"] < rows[0]["loss"] < 0.6932


async def test_dpo_stopped_and_resumed_matches_the_straight_run(tmp_path, tiny_model_dir, reference, bus, run_id):
    """Offline runs checkpoint too: stop after step 3, resume, and steps 3–7 equal a straight
    run's (the pairs cursor and AdamW state come back; 32 pairs, 8 per step: 4 per epoch)."""
    import json

    from tests.services.learner.fakes import StopAfter

    def rows(cfg):
        return {r["step"]: r for r in map(json.loads, (Path(cfg.run.dir) / "metrics.jsonl").read_text().splitlines())}

    straight = dpo_config(tmp_path, tiny_model_dir, reference, "straight", pairs=32, per_step=8)
    built = await offline(straight, bus, run_id, LearnerState(run_id=run_id, total_steps=8))
    await built.loop.run()
    built.loop.logger.close()

    split = dpo_config(tmp_path, tiny_model_dir, reference, "split", pairs=32, per_step=8)
    state = LearnerState(run_id=run_id, total_steps=8)
    built = await offline(split, bus, run_id, state)
    built.loop.logger = StopAfter(built.loop.logger, state, 2)
    await built.loop.run()
    built.loop.logger.close()
    assert built.loop.step == 3 and (Path(split.run.dir) / "checkpoints" / "step_3").is_dir()
    built = await offline(split, bus, run_id, LearnerState(run_id=run_id, total_steps=8), resume=split.run.dir)
    await built.loop.run()
    built.loop.logger.close()
    a, b = rows(straight), rows(split)
    assert sorted(b) == list(range(8))
    for step in range(3, 8):
        assert b[step]["loss"] == pytest.approx(a[step]["loss"], rel=1e-5), step
