"""DPOStep trains the preference loss the config names (policy_loss, or a weighted list)."""

import pytest

from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.dpo import DPOStep
from meshrl.services.learner.train.policy import build_policy
from tests.unit.services.learner.train.helpers import build_tiny_llama
from tests.unit.services.learner.train.test_dpo import pairs, with_reference


def first_loss(**algo):
    trainer = TrainerConfig(micro_batch_size=3, optim={"lr": 3e-3})
    step = DPOStep(
        build_policy(build_tiny_llama(), trainer, total_steps=10),
        AlgorithmConfig(offline=True, beta=0.5, **algo),
        trainer,
    )
    return step(with_reference(step, pairs()), 0)["loss"], step


def test_ipo_reads_response_lengths_and_a_weighted_list_sums():
    # policy = reference at the first step: every log-ratio is 0, so h̄ = 0 and
    # ipo = (0 − 1/(2β))² = 1, sigmoid = log 2, hinge = 1
    ipo, _ = first_loss(policy_loss="ipo")
    assert ipo == pytest.approx(1.0, abs=1e-5)
    summed, _ = first_loss(policy_loss="dpo", dpo_loss_type=["sigmoid", "hinge"], dpo_loss_weights=[1.0, 0.5])
    assert summed == pytest.approx(0.693147 + 0.5, abs=1e-5)


def test_bco_pair_keeps_its_running_mean_on_the_step():
    _, step = first_loss(policy_loss="bco_pair")
    assert step.loss_state["bco_count"] == 12  # 6 pairs: 6 chosen + 6 rejected rewards


class RecordingCheckpoints:  # a FAKE checkpoint store: keeps the saved state in memory
    def save(self, step, state, tag=None):
        self.saved = state


class Cursor:  # a FAKE pairs cursor
    def state_dict(self):
        return {"next": 6}

    def load_state_dict(self, state):
        self.loaded = state


def test_the_offline_learner_checkpoints_the_loss_state():
    import asyncio
    import json
    from types import SimpleNamespace

    from meshrl.services.learner.offline import OfflineLearner

    def learner(step):
        return OfflineLearner(
            cfg=None,
            pairs=Cursor(),
            dpo_step=step,
            reference=None,
            logger=None,
            state=SimpleNamespace(step=0),
            pad_id=0,
            checkpoints=RecordingCheckpoints(),
            step=1,
        )

    _, trained = first_loss(policy_loss="bco_pair")
    first = learner(trained)
    asyncio.run(first.save())
    saved = json.loads(json.dumps(first.checkpoints.saved))
    _, fresh = first_loss(policy_loss="sigmoid")
    fresh.loss_state.clear()
    learner(fresh).restore(saved)
    assert fresh.loss_state == trained.loss_state and fresh.loss_state["bco_count"] == 12
