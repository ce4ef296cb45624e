"""A run whose start failed keeps being a run the gateway lists: the launcher sets its
config.yaml, metrics.jsonl and groups.jsonl aside under logs/failed-start-<run id>/."""

from meshrl.gateway.runs.root import RunsRoot


def test_a_failed_start_is_still_listed(tmp_path):
    (tmp_path / "failed" / "logs" / "failed-start-failed-20261207").mkdir(parents=True)
    (tmp_path / "failed" / "logs" / "failed-start-failed-20261207" / "config.yaml").write_text("run: {}\n")
    (tmp_path / "not-a-run").mkdir()
    root = RunsRoot(tmp_path)
    assert root.names() == ["failed"]
    summary = root.summary("failed")
    assert summary.name == "failed" and not summary.live and summary.last_step == 0
