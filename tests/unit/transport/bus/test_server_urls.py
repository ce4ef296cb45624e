"""Bus.connect takes one URL, a comma-separated cluster list, or a list; nothing else."""

import pytest

from meshrl.transport.bus import BusUnavailable
from meshrl.transport.bus.client import server_urls


def test_one_url_a_comma_list_and_a_list_name_the_same_servers():
    assert server_urls("nats://a:4222") == ["nats://a:4222"]
    assert server_urls(" nats://a:4222, nats://b:4223 ,") == ["nats://a:4222", "nats://b:4223"]
    assert server_urls(["nats://a:4222", "nats://b:4223"]) == ["nats://a:4222", "nats://b:4223"]


def test_no_url_is_a_clear_error():
    with pytest.raises(BusUnavailable, match="no NATS server URL in ' , '"):
        server_urls(" , ")
