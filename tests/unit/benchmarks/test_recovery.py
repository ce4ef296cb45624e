"""benchmarks/recovery.py's arguments and window arithmetic (the benchmark itself is not a test)."""

import pytest

from benchmarks.recovery import first, parse_args, per_minute
from tests.chaos.faults import CASES


def test_faults_default_to_the_whole_catalogue_and_a_typo_is_refused_with_the_valid_names(capsys):
    assert parse_args([]).faults == list(CASES)
    assert parse_args(["--faults", "reward, nats-node", "--skip-throughput"]).faults == ["reward", "nats-node"]
    assert parse_args(["--faults", ""]).faults == []
    with pytest.raises(SystemExit):
        parse_args(["--faults", "reward,rewrd"])
    assert "unknown fault(s) rewrd: choose from rollout, sigstop, reward" in capsys.readouterr().err


def test_groups_per_minute_count_the_half_open_window():
    # (0, 6]: the groups at 1, 2 and 6 s, not the one at 0 nor at 10 -> 3 groups in 6 s = 30/min
    assert per_minute([0.0, 1.0, 2.0, 6.0, 10.0], 0.0, 6.0) == "30.0 (3 groups / 6 s)"
    assert per_minute([1.0], 0.0, None) == "-"  # the replica never rejoined
    assert first([5.0, 2.0]) == 2.0 and first([]) is None
