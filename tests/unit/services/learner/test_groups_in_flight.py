"""`meshrl status` shows "in flight": the groups the learner published and has not yet trained
on or dropped, counted when asked, not as the last step left them.

    .venv/bin/python -m pytest -q tests/unit/services/learner/test_groups_in_flight.py
"""

from meshrl.services.learner.control import LearnerState
from meshrl.services.learner.feeder import FeederState


def test_in_flight_counts_the_groups_being_played_now():
    """Step 1 trained 4 groups (the snapshot then: 0 in flight); the next 4 are published since
    and one has arrived and was dropped: 3 are out with the rollouts and environments."""
    feeder = FeederState(published=8, settled=4)
    state = LearnerState(run_id="r", total_steps=2, in_flight=0, feeder=feeder)
    feeder.settled += 1
    assert state.to_proto().groups_in_flight == 3


def test_an_offline_run_without_a_feeder_keeps_its_own_count():
    assert LearnerState(run_id="r", total_steps=2, in_flight=2).to_proto().groups_in_flight == 2
