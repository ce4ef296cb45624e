"""EpochCursor: each epoch is a permutation fixed by (seed, epoch); restore is exact."""

import numpy as np
import pytest

from meshrl.inputs.data.cursor import EpochCursor
from meshrl.inputs.data.rows import DatasetError


def test_unshuffled_order_wraps_epochs():
    cur = EpochCursor(3, shuffle=False)
    assert cur.take(4).tolist() == [0, 1, 2, 0]
    assert (cur.epoch, cur.index) == (1, 1)
    assert cur.take(5).tolist() == [1, 2, 0, 1, 2]
    assert (cur.epoch, cur.index) == (3, 0)


def test_each_epoch_is_a_permutation_set_by_seed_and_epoch():
    cur = EpochCursor(5, seed=7)
    e0, e1 = cur.take(5), cur.take(5)
    assert sorted(e0.tolist()) == sorted(e1.tolist()) == [0, 1, 2, 3, 4]
    assert np.array_equal(e0, np.random.default_rng([7, 0]).permutation(5))
    assert np.array_equal(e1, np.random.default_rng([7, 1]).permutation(5))


def test_restore_continues_exactly_and_checks_size():
    a = EpochCursor(6, seed=1)
    a.take(4)
    b = EpochCursor(6, seed=99)
    b.load_state_dict(a.state_dict())
    assert a.take(9).tolist() == b.take(9).tolist()
    with pytest.raises(DatasetError, match="saved for 6 rows but the dataset has 5"):
        EpochCursor(5).load_state_dict(a.state_dict())
    with pytest.raises(DatasetError, match="no rows left"):
        EpochCursor(0)
