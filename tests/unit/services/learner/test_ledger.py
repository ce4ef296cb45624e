"""The ledger's view of which published groups a dead learner left unsettled."""

from meshrl.services.learner.ledger import Ledger, read_ledger, unsettled_groups


def test_unsettled_are_published_groups_neither_trained_nor_dropped(tmp_path):
    ledger = Ledger(tmp_path / "groups.jsonl")
    for gid, version in (("a", 0), ("b", 0), ("c", 1), ("d", 1)):
        ledger.published(gid, version, draw=ord(gid))
    ledger.trained(type("G", (), {"group_id": "a", "policy_version": 0, "rollout_replica": "r"}), step=0)
    ledger.dropped("c", "stale", 0)
    ledger.close()
    assert unsettled_groups(read_ledger(tmp_path / "groups.jsonl")) == [("b", 0), ("d", 1)]
