"""The learner's collective weights server hands the model only to a replica holding the run's
weights token.

A real WeightsServer (a TCPStore on a real port, gloo pair groups), as the learner runs it
with `weights_transport: collective`; in fresh processes, as a replica's engine worker is:
a client without the token (any process that reaches the port) and one with a wrong token
ask for the served version and are refused with nothing received, while the rollout's own
client (the run's token) receives every tensor.

Run: .venv/bin/python -m pytest tests/security/test_collective_attack.py -q
"""

import multiprocessing as mp

import pytest
import torch

from meshrl.transport.weights.collective import WeightsServer, ask_for, receive, snapshot

CTX = mp.get_context("spawn")
TOKEN = b"the-run-weights-token-0123456789abcdef"


def client(address: str, token, out) -> None:
    try:
        ticket, manifest = ask_for(address, "someone", 3, timeout_s=30, token=token)
        out.put(
            {
                name: t.tolist()
                for name, t in receive(address, ticket, manifest, torch.device("cpu"), timeout_s=30, token=token)
            }
        )
    except RuntimeError as err:
        out.put(str(err))


def ask_as(address: str, token):
    out = CTX.Queue()
    process = CTX.Process(target=client, args=(address, token, out))
    process.start()
    answer = out.get(timeout=90)
    process.join(timeout=30)
    return answer


@pytest.mark.timeout(300)
def test_the_model_goes_only_to_a_holder_of_the_weights_token():
    server = WeightsServer("127.0.0.1", 0, timeout_s=30, token=TOKEN)
    try:
        server.offer(3, snapshot({"embed.weight": torch.tensor([1.5, -2.0])}.items(), None))
        address = f"tcp://127.0.0.1:{server.port}"
        for stranger in (None, b"a-guess-at-the-token"):
            refused = ask_as(address, stranger)
            assert isinstance(refused, str) and "not authorised" in refused, refused
        assert ask_as(address, TOKEN) == {"embed.weight": [1.5, -2.0]}
    finally:
        server.close()
