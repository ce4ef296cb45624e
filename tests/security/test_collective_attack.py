"""The learner's collective weights server hands the model only to a replica holding the run's
weights token, and nobody without the token can jam or answer its rendezvous.

A real WeightsServer (a TCPStore on a real port, gloo pair groups), as the learner runs it
with `weights_transport: collective`; in fresh processes, as a replica's engine worker is:
- a client without the token (any process that reaches the port) and one with a wrong token
  ask for the served version and get nothing, while the rollout's own client (the run's
  token) receives every tensor;
- an attacker without the token pre-writes the store before the replica asks (the ticket
  counter pushed ahead, an error answer, a refusal and a bogus ask for every ticket it can
  name): the replica still receives the learner's tensors;
- an attacker who learnt the key names (they travel in clear) but not the token pre-writes
  the answer the replica will read: the replica refuses it with a clear error and never acts
  on the attacker's answer.

Run: .venv/bin/python -m pytest tests/security/test_collective_attack.py -q
"""

import json
import multiprocessing as mp
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

from meshrl.transport.weights.collective import WeightsServer, ask_for, receive, snapshot
from meshrl.transport.weights.collective_auth import RendezvousKeys

CTX = mp.get_context("spawn")
TOKEN = b"the-run-weights-token-0123456789abcdef"
FORGED = "forged by the attacker"
pytestmark = pytest.mark.timeout(300)


def client(address: str, token, timeout_s: float, out) -> None:
    try:
        ticket, manifest = ask_for(address, "someone", 3, timeout_s=timeout_s, token=token)
        out.put(
            {
                name: t.tolist()
                for name, t in receive(address, ticket, manifest, torch.device("cpu"), timeout_s=timeout_s, token=token)
            }
        )
    except RuntimeError as err:
        out.put(str(err))


def ask_as(address: str, token, timeout_s: float = 30):
    out = CTX.Queue()
    process = CTX.Process(target=client, args=(address, token, timeout_s, out))
    process.start()
    answer = out.get(timeout=90)
    process.join(timeout=30)
    return answer


@pytest.fixture
def served():
    server = WeightsServer("127.0.0.1", 0, timeout_s=30, token=TOKEN)
    server.offer(3, snapshot({"embed.weight": torch.tensor([1.5, -2.0])}.items(), None))
    yield server, f"tcp://127.0.0.1:{server.port}"
    server.close()


def jam(port: int, keys: RendezvousKeys, tickets: range) -> None:
    """What an attacker with a store connection writes before the replica asks."""
    store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=10))
    store.add(keys.key("tickets"), len(tickets) // 2)
    for ticket in tickets:
        store.set(keys.key(f"answer/{ticket}"), json.dumps({"error": FORGED}))
        store.set(keys.key(f"go/{ticket}"), "0")
    for ticket in tickets[len(tickets) // 2 :]:
        store.set(keys.key(f"ask/{ticket}"), json.dumps({"replica": "attacker", "version": 3, "proof": ""}))


def test_the_model_goes_only_to_a_holder_of_the_weights_token(served):
    _, address = served
    for stranger in (None, b"a-guess-at-the-token"):
        refused = ask_as(address, stranger, timeout_s=2)  # never answered: it cannot name the keys
        assert isinstance(refused, str) and "weights token" in refused, refused
    assert ask_as(address, TOKEN) == {"embed.weight": [1.5, -2.0]}


def test_a_store_jammed_without_the_token_still_serves_the_replica(served):
    server, address = served
    jam(server.port, RendezvousKeys(None), range(1, 41))  # the names the protocol used before its namespace
    assert ask_as(address, TOKEN) == {"embed.weight": [1.5, -2.0]}


def test_an_answer_forged_under_known_key_names_is_refused(served):
    server, address = served
    keys = RendezvousKeys(TOKEN)  # the attacker saw these names on the wire; it has no token to seal with
    store = dist.TCPStore("127.0.0.1", server.port, is_master=False, timeout=timedelta(seconds=10))
    store.set(keys.key("answer/1"), json.dumps({"error": FORGED}))
    refused = ask_as(address, TOKEN)
    assert isinstance(refused, str) and "does not carry the run's weights token's HMAC" in refused, refused
    assert FORGED not in refused
