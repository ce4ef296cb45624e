"""AlertEngine episodes and actions; log, JSONL and NATS sinks; config checks."""

import asyncio
import json
import logging

import pytest
from pydantic import ValidationError

from meshrl.alerts import AlertEngine, AlertsConfig, strongest_action
from meshrl.alerts.sinks import JsonlSink, LogSink, NatsSink, build_sinks
from meshrl.alerts.sinks.webhook import WebhookSink
from meshrl.alerts.types import Alert
from meshrl.config.alerts import WebhookConfig
from meshrl.errors import ConfigError
from tests.unit.alerts.helpers import engine, feed, fired_at


def test_once_per_episode_and_rearm_after_clearing():
    eng = engine("kl_high", kl_high={"max_kl": 1.0, "consecutive_steps": 1})
    per_step = feed(eng, "kl", [2, 3, 4, 0.5, 2, 2, 0.1, 0.2, 5])
    assert fired_at(per_step) == [1, 5, 9]
    assert eng.active == {"kl_high"}


def test_actions_come_from_config_and_strongest_wins():
    eng = engine(
        "kl_high",
        "nonfinite",
        kl_high={"max_kl": 1.0, "consecutive_steps": 1, "action": "stop", "severity": "critical"},
    )
    alerts = eng.observe(1, {"kl": 3.0, "loss": float("nan")})
    assert {a.rule: a.action for a in alerts} == {"kl_high": "stop", "nonfinite": "pause"}
    assert strongest_action(alerts) == "stop"
    assert strongest_action([a for a in alerts if a.rule == "nonfinite"]) == "pause"
    assert strongest_action([]) == "none"


def test_every_sink_gets_the_alert_even_if_one_fails(caplog):
    got = []

    def broken(alert):
        raise RuntimeError("sink down")

    eng = engine("reward_nan", sinks=[broken, got.append])
    [alert] = eng.observe(3, {"reward": None})
    assert got == [alert]
    assert "sink" in caplog.text and "reward_nan" in caplog.text


def test_disabled_alerts_build_no_rules():
    assert AlertEngine(AlertsConfig(enabled=False)).rules == []
    assert len(AlertEngine(AlertsConfig()).rules) == 13


def test_log_and_jsonl_sinks(tmp_path, caplog):
    path = tmp_path / "run" / "alerts.jsonl"
    eng = engine("reward_nan", "nonfinite", sinks=[LogSink(), JsonlSink(path)])
    with caplog.at_level(logging.WARNING, logger="meshrl.alerts"):
        eng.observe(4, {"reward": float("nan"), "loss": float("inf")})
    assert [r.levelno for r in caplog.records] == [logging.CRITICAL, logging.CRITICAL]
    assert "ALERT reward_nan [critical, action=none] step 4: reward is nan" in caplog.text
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    # rules run in registry (name) order
    assert [(e["rule"], e["key"], e["step"]) for e in lines] == [
        ("nonfinite", "nonfinite:loss", 4),
        ("reward_nan", "reward_nan", 4),
    ]
    assert lines[0] == {
        "rule": "nonfinite",
        "key": "nonfinite:loss",
        "severity": "critical",
        "action": "pause",
        "message": "loss is inf (not finite) at step 4",
        "step": 4,
        "time": 1234.5,
        "run_id": "run-t",
        "values": {"loss": None},
    }


def test_build_sinks_from_config(tmp_path):
    sinks = build_sinks(AlertsConfig(), tmp_path)
    assert [type(s) for s in sinks] == [LogSink, JsonlSink]
    assert sinks[1].path == tmp_path / "alerts.jsonl"  # the run dir's own file, never a path from config

    async def publish(_):
        pass

    config = AlertsConfig(events_file=False, webhook={"url": "http://127.0.0.1:9/x"})
    sinks = build_sinks(config, tmp_path, publish)
    assert [type(s) for s in sinks] == [LogSink, NatsSink, WebhookSink]
    sinks[-1].close()


def test_the_events_file_is_on_or_off_never_a_path():
    # a submitted run once named any path here (issue 23); the file is the run dir's own now
    with pytest.raises(ValidationError, match="valid boolean"):
        AlertsConfig(events_file="../../gateway/tokens.yaml")


async def test_nats_sink_publishes_from_the_running_loop_and_logs_failures(caplog):
    published = []

    async def publish(alert_dict):
        await asyncio.sleep(0)
        if alert_dict["key"] == "nonfinite:loss":
            raise ConnectionError("nats gone")
        published.append(alert_dict)

    sink = NatsSink(publish)
    eng = engine("reward_nan", "nonfinite", sinks=[sink])
    eng.observe(1, {"reward": None, "loss": None})
    await sink.drain()
    assert [(d["rule"], d["step"]) for d in published] == [("reward_nan", 1)]
    assert "publishing an alert to NATS failed: ConnectionError('nats gone')" in caplog.text


def test_nats_sink_from_another_thread_uses_the_given_loop():
    loop = asyncio.new_event_loop()
    published = []

    async def publish(alert_dict):
        published.append(alert_dict["rule"])

    try:
        sink = NatsSink(publish, loop=loop)
        alert = Alert("kl_high", "kl_high", "warning", "none", "m", 1, 0.0)
        import threading

        runner = threading.Thread(target=loop.run_forever)
        runner.start()
        sink(alert)
        asyncio.run_coroutine_threadsafe(sink.drain(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        runner.join(timeout=10)
    finally:
        loop.close()
    assert published == ["kl_high"]
    with pytest.raises(RuntimeError, match="needs a running event loop"):
        NatsSink(publish)(alert)


def test_config_rejects_unknown_keys_secrets_in_url_and_bad_env_names():
    with pytest.raises(ValidationError, match="extra"):
        AlertsConfig.model_validate({"kl_high": {"max": 1}})
    with pytest.raises(ValidationError, match="must not hold credentials"):
        WebhookConfig(url="https://user:secret@hooks.example.com/x")
    with pytest.raises(ValidationError, match="NAME of an environment variable"):
        WebhookConfig(url="https://hooks.example.com/x", token_env="xoxb-123-secret")
    with pytest.raises(ValidationError, match="http"):
        WebhookConfig(url="ftp://hooks.example.com/x")
    with pytest.raises(ValidationError):
        AlertsConfig.model_validate({"spike": {"action": "explode"}})


def test_webhook_token_env_must_be_set():
    config = WebhookConfig(url="http://127.0.0.1:9/x", token_env="MESHRL_TEST_ALERT_TOKEN")
    with pytest.raises(ConfigError, match="MESHRL_TEST_ALERT_TOKEN, but that environment variable"):
        WebhookSink(config, env={})


def test_alert_dict_turns_nonfinite_values_into_null(tmp_path):
    alert = Alert("x", "x", "info", "none", "m", 1, 0.0, values={"a": float("nan"), "b": 2.0})
    assert alert.to_dict()["values"] == {"a": None, "b": 2.0}
    JsonlSink(tmp_path / "a.jsonl")(alert)
    assert json.loads((tmp_path / "a.jsonl").read_text())["values"] == {"a": None, "b": 2.0}
