"""open_service_metrics: the config switches the endpoint on and off, and a taken port is a
ConfigError that names `telemetry.metrics_port` (a service exits 2 with it)."""

import socket

import pytest

from meshrl.config import ConfigError
from meshrl.config.load import load_config
from meshrl.telemetry.service_metrics import close_service_metrics, open_service_metrics


def config(**telemetry):
    return load_config(base={"model": {"path": "m"}, "data": {"train": "x.jsonl"}, "telemetry": telemetry})


async def test_on_by_default_on_a_free_port(capsys):
    handle = open_service_metrics(config(), "reward", "reward-0", "run-s")
    try:
        assert handle.port > 0
        assert f"METRICS http://127.0.0.1:{handle.port}/metrics" in capsys.readouterr().out
    finally:
        await close_service_metrics(None, handle)


def test_off_gives_none():
    assert open_service_metrics(config(metrics=False), "reward", "reward-0", "run-s") is None


def test_a_taken_port_names_the_key():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"telemetry.metrics_port={port}: .*{port}"):
            open_service_metrics(config(metrics_port=port), "reward", "reward-0", "run-s")


def test_port_out_of_range_is_a_config_error():
    with pytest.raises(ConfigError, match="metrics_port"):
        config(metrics_port=70000)
