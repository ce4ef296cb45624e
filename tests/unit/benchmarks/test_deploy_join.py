"""benchmarks/deploy_join.py's log reading and loopback hosts (the benchmark itself is not a test)."""

from datetime import datetime

from benchmarks.deploy_join import first_load
from tests.deploy.netns import Loopback

LOG = (
    "2026-12-03 17:24:50,000 meshrl.services.rollout INFO rollout-b: waiting for weights\n"
    "2026-12-03 17:24:55,750 meshrl.transport.weights.update INFO rollout-b: loaded weights v17 "
    "(0.6 MB, objectstore) in 0.06 s\n"
    "2026-12-03 17:24:58,000 meshrl.transport.weights.update INFO rollout-b: loaded weights v18 "
    "(0.6 MB, objectstore) in 0.05 s\n"
)


def test_first_load_is_the_first_object_store_load_timed_from_the_start():
    start = datetime(2026, 12, 3, 17, 24, 0).timestamp()
    assert (
        first_load(LOG, start)
        == "v17 (0.6 MB, object store) loaded 55.8 s after its start (the engine's reload: 0.06 s)"
    )
    assert first_load(LOG.replace("objectstore", "shm"), start) == "not in its log"


def test_loopback_hosts_are_this_host():
    with Loopback({"nats": 1, "learner": 2}) as hosts:
        assert hosts.ip("nats") == hosts.ip("learner") == "127.0.0.1"
        proc = hosts.popen("learner", ["true"])
        assert proc.wait(10) == 0
