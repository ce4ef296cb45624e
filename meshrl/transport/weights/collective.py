"""Weights over a collective: the learner sends its tensors straight into a rollout replica's
engine worker over a two-member process group (NCCL between GPUs, gloo on CPU); no file.

`weights_transport: collective`. The learner keeps a snapshot of its latest version (in the
rollout's dtype, on its own device) and serves it to whichever replica asks, one replica at
a time, so a replica that joins a running run gets its weights the same way as the others.
The rendezvous is a torch `TCPStore` the learner hosts at the notice's `location`:

    replica (front end): n = add("tickets", 1); set("ask/n", {replica, version})
    learner:             answers "answer/n" with the manifest (names, dtypes, shapes) or an
                         error (that version is gone: a newer notice follows)
    replica (front end): checks the manifest against the notice; set("go/n", "1" or "0")
    learner:             on "1", joins the pair group under the prefix "pair/n" as rank 0
                         and broadcasts every tensor in manifest order
    replica (worker):    joins "pair/n" as rank 1 and receives each tensor into a fresh
                         buffer that goes straight to vLLM's `reload_weights`.

Anyone who reaches the port can talk to a TCPStore, so the run's weights token (learner and
rollout only: meshrl.security.run_key, MESHRL_WEIGHTS_TOKEN_FILE) guards it: an ask carries
`proof` = HMAC-SHA256(token, "ask/<ticket>/<replica>/<version>"), the learner answers only a
valid one, and the pair group's store prefix is HMAC(token, "pair/<ticket>"), which a process
without the token cannot name (so it cannot take the replica's place in the group). Every
other key lives under a namespace derived from the token too, and the answer and the "go"
carry its HMAC (collective_auth.py), so nobody without the token can pre-write what either
side reads or push the ticket counter. Without a token on the learner (a bare test), asks
are not checked.

The notice's `sha256` is the manifest's digest and `size_bytes` its byte count, so the
replica refuses a transfer whose layout is not the announced one before its engine is
touched. The bytes themselves travel over TCP (gloo) or NCCL, which carry them intact; they
are not hashed a second time (on a GPU that would cost a copy to the host).
Simplified: one transfer at a time (a broadcast to all replicas at once would save
bandwidth with many replicas, but fixes membership for the group's life).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable, Iterable, Iterator

import torch
import torch.distributed as dist

from meshrl.security.run_key import WEIGHTS_TOKEN_ENV, weights_token_from_env
from meshrl.transport.weights.collective_auth import RendezvousKeys

log = logging.getLogger(__name__)

ASK_GRACE_S = 10.0  # a ticket taken but never asked for (its replica died) is skipped after this
FROM_ENV = object()  # the token argument's default: the run's weights token from the environment


def _token(token) -> bytes | None:
    return weights_token_from_env() if token is FROM_ENV else token


def ask_proof(token: bytes, ticket: int, replica: str, version: int) -> str:
    return hmac.new(token, f"ask/{ticket}/{replica}/{version}".encode(), hashlib.sha256).hexdigest()


def pair_prefix(token: bytes | None, ticket: int) -> str:
    """The pair group's store prefix: unguessable without the token."""
    if token is None:
        return f"pair/{ticket}"
    return f"pair/{ticket}/{hmac.new(token, f'pair/{ticket}'.encode(), hashlib.sha256).hexdigest()}"


@dataclass(frozen=True)
class Manifest:
    """What one transfer carries, in order: (name, dtype, shape) per tensor."""

    version: int
    tensors: tuple[tuple[str, str, tuple[int, ...]], ...]

    @classmethod
    def of(cls, version: int, tensors: dict[str, torch.Tensor]) -> "Manifest":
        return cls(
            version, tuple((name, str(t.dtype).removeprefix("torch."), tuple(t.shape)) for name, t in tensors.items())
        )

    def to_json(self) -> str:
        return json.dumps({"version": self.version, "tensors": [list(t) for t in self.tensors]})

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        data = json.loads(text)
        return cls(int(data["version"]), tuple((n, d, tuple(s)) for n, d, s in data["tensors"]))

    def digest(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    def nbytes(self) -> int:
        return sum(torch.empty((), dtype=getattr(torch, d)).element_size() * math.prod(s) for _, d, s in self.tensors)


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"collective weights location {address!r}: expected tcp://HOST:PORT")
    return host, int(port)


def pair_group(store, prefix: str, rank: int, device: torch.device, timeout_s: float):
    """A two-member process group (learner rank 0, one replica rank 1) under `prefix`:
    NCCL when the tensors live on a GPU, gloo otherwise. Never the default group: vLLM's
    worker and the learner's ranks already have theirs."""
    prefixed = dist.PrefixStore(prefix, store)
    timeout = timedelta(seconds=timeout_s)
    if device.type == "cuda":
        options = dist.ProcessGroupNCCL.Options()
        options._timeout = timeout
        return dist.ProcessGroupNCCL(prefixed, rank, 2, options)
    return dist.ProcessGroupGloo(prefixed, rank, 2, timeout)


def broadcast(group, tensor: torch.Tensor) -> None:
    options = dist.BroadcastOptions()
    options.rootRank = 0
    group.broadcast([tensor], options).wait()


def receive_tensors(group, manifest: Manifest, device: torch.device) -> Iterator[tuple[str, torch.Tensor]]:
    """Each tensor of `manifest`, received in order into a fresh buffer on `device`."""
    for name, dtype, shape in manifest.tensors:
        tensor = torch.empty(shape, dtype=getattr(torch, dtype), device=device)
        broadcast(group, tensor)
        yield name, tensor


class WeightsServer:
    """The learner's side: hosts the store, keeps the latest snapshot, serves tickets in a
    thread. `offer()` replaces the snapshot; `close()` stops serving."""

    def __init__(self, host: str = "0.0.0.0", port: int = 0, *, timeout_s: float = 120.0, token=FROM_ENV):
        self.store = dist.TCPStore(
            host, port, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=timeout_s)
        )
        self.port, self.timeout_s, self.token = self.store.port, timeout_s, _token(token)
        self.keys = RendezvousKeys(self.token)
        if self.token is None:
            log.warning(
                "the collective weights server at port %d has no weights token (%s): any process that "
                "reaches it can take the model",
                self.port,
                WEIGHTS_TOKEN_ENV,
            )
        self._snapshot: tuple[Manifest, list[torch.Tensor]] | None = None
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread = threading.Thread(target=self._serve, name="weights-server", daemon=True)
        self._thread.start()

    def offer(self, version: int, tensors: dict[str, torch.Tensor]) -> Manifest:
        """Serve `tensors` as `version` from now on (the caller passes copies it won't touch)."""
        manifest = Manifest.of(version, tensors)
        with self._lock:
            self._snapshot = (manifest, list(tensors.values()))
        return manifest

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._lock:
            self._snapshot = None

    def _serve(self) -> None:
        ticket = 1
        while not self._stop.is_set():
            ask = self._next_ask(ticket)
            if ask is None:
                return
            if ask != "skip":
                try:
                    self._answer(ticket, json.loads(ask))
                except Exception as err:  # a replica that died mid-transfer: serve the next one
                    log.warning("weights transfer %d failed: %s", ticket, err)
            ticket += 1

    def _next_ask(self, ticket: int, poll_s: float = 0.05) -> str | None:
        """The ask of `ticket`; "skip" when its replica took the ticket and never asked (it
        died); None when stopped. Polled with `check` (a timed-out `wait` logs a warning)."""
        waited = 0.0
        while not self._stop.is_set():
            if self.store.check([self.keys.key(f"ask/{ticket}")]):
                return self.store.get(self.keys.key(f"ask/{ticket}")).decode()
            if self.store.add(self.keys.key("tickets"), 0) >= ticket:  # taken: its ask is on the way
                waited += poll_s
                if waited >= ASK_GRACE_S:
                    return "skip"
            time.sleep(poll_s)
        return None

    def _answer(self, ticket: int, ask: dict) -> None:
        if self.token is not None and not hmac.compare_digest(
            str(ask.get("proof", "")), ask_proof(self.token, ticket, str(ask.get("replica")), ask.get("version"))
        ):
            log.warning(
                "weights ticket %d refused: its ask (replica %r) does not prove the run's weights token",
                ticket,
                ask.get("replica"),
            )
            error = f"not authorised: the ask does not prove the run's weights token ({WEIGHTS_TOKEN_ENV})"
            self._reply(ticket, ask, json.dumps({"error": error}))
            return
        with self._lock:
            snapshot = self._snapshot
        if snapshot is None or snapshot[0].version != ask["version"]:
            held = None if snapshot is None else snapshot[0].version
            self._reply(ticket, ask, json.dumps({"error": f"the learner serves version {held}, not {ask['version']}"}))
            return
        manifest, tensors = snapshot
        self._reply(ticket, ask, manifest.to_json())
        if not self._accepted(ticket):
            return
        group = pair_group(self.store, pair_prefix(self.token, ticket), 0, tensors[0].device, self.timeout_s)
        for tensor in tensors:
            broadcast(group, tensor)
        log.info("weights v%d sent to %s (%d tensors)", manifest.version, ask.get("replica"), len(tensors))

    def _reply(self, ticket: int, ask: dict, body: str) -> None:
        """Put the answer to `ticket`, sealed for the replica and version that asked."""
        label = answer_label(ticket, str(ask.get("replica")), ask.get("version"))
        self.store.set(self.keys.key(f"answer/{ticket}"), self.keys.seal(label, body))

    def _accepted(self, ticket: int, poll_s: float = 0.05) -> bool:
        """Whether the replica took the manifest ("go/n" = "1"); False when it refused it,
        said nothing within the timeout (it died), or its "go" is not sealed with the token."""
        key = self.keys.key(f"go/{ticket}")
        for _ in range(int(self.timeout_s / poll_s)):
            if self._stop.is_set():
                return False
            if self.store.check([key]):
                return self.keys.open(f"go/{ticket}", self.store.get(key)) == "1"
            time.sleep(poll_s)
        return False


def answer_label(ticket: int, replica: str, version) -> str:
    """What an answer's seal binds it to: the ticket and the ask it answers."""
    return f"answer/{ticket}/{replica}/{version}"


def ask_for(
    address: str,
    replica: str,
    version: int,
    accept: Callable[[Manifest], None] = lambda _: None,
    timeout_s: float = 120.0,
    token=FROM_ENV,
) -> tuple[int, Manifest]:
    """The replica's front end: take a ticket for `version`, let `accept` check the manifest
    (it raises to refuse it); returns (ticket, manifest) for the worker's `receive`. Raises
    RuntimeError when the learner no longer serves that version."""
    host, port = split_address(address)
    store = dist.TCPStore(host, port, is_master=False, timeout=timedelta(seconds=timeout_s))
    token = _token(token)
    keys = RendezvousKeys(token)
    ticket = store.add(keys.key("tickets"), 1)
    proof = ask_proof(token, ticket, replica, version) if token is not None else ""
    store.set(keys.key(f"ask/{ticket}"), json.dumps({"replica": replica, "version": version, "proof": proof}))
    answer = json.loads(keys.open(answer_label(ticket, replica, version), _answer_of(store, keys, ticket, address)))
    if "error" in answer:
        raise RuntimeError(f"weights v{version} from {address}: {answer['error']}")
    manifest = Manifest.from_json(json.dumps(answer))
    try:
        accept(manifest)
    except BaseException:
        store.set(keys.key(f"go/{ticket}"), keys.seal(f"go/{ticket}", "0"))  # the learner serves the next at once
        raise
    store.set(keys.key(f"go/{ticket}"), keys.seal(f"go/{ticket}", "1"))
    return ticket, manifest


def _answer_of(store, keys: RendezvousKeys, ticket: int, address: str) -> bytes:
    """The raw answer to `ticket`, waited for up to the store's timeout."""
    try:
        return store.get(keys.key(f"answer/{ticket}"))
    except dist.DistStoreError as err:
        raise RuntimeError(
            f"no answer from the learner's weights server at {address}: is the learner serving, and does this "
            f"replica hold the run's weights token ({WEIGHTS_TOKEN_ENV}, the learner's own)? ({err})"
        ) from None


def receive(
    address: str, ticket: int, manifest: Manifest, device: torch.device, timeout_s: float = 120.0, token=FROM_ENV
) -> Iterator[tuple[str, torch.Tensor]]:
    """The replica's engine worker: join ticket's pair group as rank 1; yield each tensor."""
    host, port = split_address(address)
    store = dist.TCPStore(host, port, is_master=False, timeout=timedelta(seconds=timeout_s))
    group = pair_group(store, pair_prefix(_token(token), ticket), 1, device, timeout_s)
    yield from receive_tensors(group, manifest, device)


def snapshot(
    tensors: Iterable[tuple[str, torch.Tensor]], dtype: torch.dtype | None, device: torch.device | None = None
) -> dict[str, torch.Tensor]:
    """Detached copies (in `dtype`, on `device` when given; one copy each) that training
    may not change while they are served."""
    return {name: t.detach().to(device=device or t.device, dtype=dtype or t.dtype, copy=True) for name, t in tensors}
