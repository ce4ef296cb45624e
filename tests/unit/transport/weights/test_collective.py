"""Weights over a collective (meshrl.transport.weights.collective): a real TCPStore and real
gloo pair groups between this process (the learner's server) and a replica process."""

import json
import multiprocessing as mp
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

from meshrl.transport.weights import collective
from meshrl.transport.weights.collective import Manifest, WeightsServer, ask_for, receive, snapshot

CTX = mp.get_context("spawn")  # a fresh interpreter, as a replica's engine worker is


def replica(address: str, version: int, out) -> None:
    """Ask for `version`, receive it, report what arrived (or the refusal)."""
    try:
        ticket, manifest = ask_for(address, "rollout-0", version, timeout_s=30)
        got = dict(receive(address, ticket, manifest, torch.device("cpu"), timeout_s=30))
        out.put({name: (str(t.dtype), t.float().tolist()) for name, t in got.items()})
    except RuntimeError as err:
        out.put(str(err))


def run_replica(address: str, version: int):
    out = CTX.Queue()
    process = CTX.Process(target=replica, args=(address, version, out))
    process.start()
    answer = out.get(timeout=60)
    process.join(timeout=30)
    return answer


@pytest.fixture
def server():
    served = WeightsServer("127.0.0.1", 0, timeout_s=30)
    yield served
    served.close()


def address_of(server: WeightsServer) -> str:
    return f"tcp://127.0.0.1:{server.port}"


def test_a_replica_receives_the_offered_version_in_the_rollout_dtype(server):
    weights = {"embed.weight": torch.tensor([[1.5, -2.0], [0.25, 3.0]]), "norm.weight": torch.tensor([1.0, 0.5, 2.0])}
    server.offer(4, snapshot(weights.items(), torch.bfloat16))
    weights["norm.weight"].add_(100.0)  # training goes on: the served snapshot must not change
    got = run_replica(address_of(server), 4)
    assert got == {
        "embed.weight": ("torch.bfloat16", [[1.5, -2.0], [0.25, 3.0]]),
        "norm.weight": ("torch.bfloat16", [1.0, 0.5, 2.0]),
    }


def test_a_version_no_longer_served_is_refused_by_name(server):
    server.offer(5, {"w": torch.zeros(2)})
    assert run_replica(address_of(server), 4) == (
        f"weights v4 from {address_of(server)}: the learner serves version 5, not 4"
    )


def test_a_ticket_whose_replica_died_before_asking_is_skipped(server, monkeypatch):
    monkeypatch.setattr(collective, "ASK_GRACE_S", 0.5)
    server.offer(1, {"w": torch.arange(3.0)})
    store = dist.TCPStore("127.0.0.1", server.port, is_master=False, timeout=timedelta(seconds=10))
    assert store.add("tickets", 1) == 1  # taken, never asked for
    assert run_replica(address_of(server), 1) == {"w": ("torch.float32", [0.0, 1.0, 2.0])}


def test_the_manifest_names_the_layout_and_its_bytes():
    manifest = Manifest.of(7, {"a": torch.zeros(3, 4, dtype=torch.bfloat16), "b": torch.zeros(5)})
    assert manifest.nbytes() == 3 * 4 * 2 + 5 * 4
    assert Manifest.from_json(manifest.to_json()) == manifest
    assert json.loads(manifest.to_json())["tensors"][0] == ["a", "bfloat16", [3, 4]]
    assert manifest.digest() != Manifest.of(7, {"a": torch.zeros(3, 4), "b": torch.zeros(5)}).digest()


def test_a_bad_location_says_what_is_expected():
    with pytest.raises(ValueError, match="expected tcp://HOST:PORT"):
        collective.split_address("learner-0")


def asks_and_dies(address: str) -> None:
    ask_for(address, "rollout-1", 2, timeout_s=30)  # the answer comes; the worker never joins


def test_a_replica_that_dies_mid_transfer_does_not_block_the_next():
    server = WeightsServer("127.0.0.1", 0, timeout_s=2)
    try:
        server.offer(2, {"w": torch.ones(4)})
        dead = CTX.Process(target=asks_and_dies, args=(address_of(server),))
        dead.start()
        dead.join(timeout=60)
        assert run_replica(address_of(server), 2) == {"w": ("torch.float32", [1.0, 1.0, 1.0, 1.0])}
    finally:
        server.close()


def refuses(address: str, out) -> None:
    def accept(manifest):
        raise ValueError(f"not the notice's layout: {manifest.nbytes()} bytes")

    try:
        ask_for(address, "rollout-2", 6, accept, timeout_s=30)
    except ValueError as err:
        out.put(str(err))


def test_a_refused_manifest_frees_the_server_for_the_next_replica():
    """Refused (the layout is not the notice's): the learner does not wait for a worker
    that will never join (its timeout here is far longer than the test waits)."""
    server = WeightsServer("127.0.0.1", 0, timeout_s=600)
    try:
        server.offer(6, {"w": torch.full((2,), 7.0)})
        out = CTX.Queue()
        first = CTX.Process(target=refuses, args=(address_of(server), out))
        first.start()
        assert out.get(timeout=60) == "not the notice's layout: 8 bytes"
        first.join(timeout=30)
        assert run_replica(address_of(server), 6) == {"w": ("torch.float32", [7.0, 7.0])}
    finally:
        server.close()
