"""The multi-host drill's loopback mode, in one second (CI runs the drill in its netns mode,
as root; this keeps the loopback mode's own parts from rotting there): each host's address,
the environment that binds and announces it, and the freeze that stands in for a cut link."""

import os
import signal
import socket

from tests.deploy.loopback_hosts import LoopbackHosts

COMPOSE_ENV = {
    "MESHRL_NATS_URL": "nats://nats:4222",
    "MESHRL_BIND_HOST": "0.0.0.0",
    "MESHRL_ADVERTISE_HOST": "@ip",
    "MESHRL_RUN_ID": "r",
}


def test_each_host_binds_and_announces_its_own_address_and_dials_nats_by_address():
    hosts = LoopbackHosts({"nats": 1, "rollout-a": 3, "rollout-b": 4})
    assert [hosts.ip(h) for h in ("nats", "rollout-a", "rollout-b")] == ["127.0.0.11", "127.0.0.13", "127.0.0.14"]
    assert hosts.service_env("rollout-b", COMPOSE_ENV) == {
        "MESHRL_NATS_URL": "nats://127.0.0.11:4222",
        "MESHRL_BIND_HOST": "127.0.0.14",
        "MESHRL_ADVERTISE_HOST": "127.0.0.14",
        "MESHRL_RUN_ID": "r",
    }
    with socket.socket() as a, socket.socket() as b:  # one port, two hosts: no clash
        a.bind((hosts.ip("rollout-a"), 0))
        b.bind((hosts.ip("rollout-b"), a.getsockname()[1]))


def test_a_cut_freezes_every_process_of_the_host_and_a_restore_thaws_them():
    with LoopbackHosts({"rollout-b": 4, "other": 5}) as hosts:
        child = ["sh", "-c", "sleep 30 & sleep 30; wait"]  # a process and its child, one group
        frozen = hosts.popen("rollout-b", child, start_new_session=True)
        spared = hosts.popen("other", child, start_new_session=True)
        try:
            hosts.cut("rollout-b")
            assert hosts.is_cut("rollout-b") and not hosts.is_cut("other")
            hosts.restore("rollout-b")
            assert not hosts.is_cut("rollout-b")
        finally:
            for proc in (frozen, spared):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
