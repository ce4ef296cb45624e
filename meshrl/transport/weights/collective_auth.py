"""The collective weights rendezvous, authenticated with the run's weights token: every key the
learner and a replica read lives under a namespace only a token holder can name, and every
value one of them acts on carries an HMAC the other checks.

    keys = RendezvousKeys(token)
    store.add(keys.key("tickets"), 1)                        # meshrl-weights/<hmac>/tickets
    store.set(keys.key("answer/3"), keys.seal("answer/3/rollout-0/7", manifest_json))
    body = keys.open("answer/3/rollout-0/7", store.get(keys.key("answer/3")))   # Unproven if forged

Why: a torch TCPStore answers anyone who reaches its port, and `get` returns whatever is
there, so a process without the token could pre-write the answers a replica is about to
read (an error for every ticket, or another layout) or push the ticket counter so far ahead
that the learner waits out every skipped ticket. Under the namespace it cannot name a key
the protocol reads; the seal refuses a value written by someone who learnt the namespace
(it travels in clear over the store's TCP connection) but not the token. Without a token
(a bare test) keys and values are plain, as before.
"""

from __future__ import annotations

import hashlib
import hmac
import json

NAMESPACE_LABEL = b"meshrl-weights-rendezvous"


class Unproven(RuntimeError):
    """A rendezvous value that does not carry the run's weights token's HMAC."""


def _mac(token: bytes, label: str, body: str) -> str:
    return hmac.new(token, f"{label}\n{body}".encode(), hashlib.sha256).hexdigest()


class RendezvousKeys:
    def __init__(self, token: bytes | None):
        self.token = token
        if token is None:
            self.prefix = ""
        else:
            self.prefix = f"meshrl-weights/{hmac.new(token, NAMESPACE_LABEL, hashlib.sha256).hexdigest()[:32]}/"

    def key(self, name: str) -> str:
        """The store key of `name` (tickets, ask/N, answer/N, go/N) in this run's namespace."""
        return self.prefix + name

    def seal(self, label: str, body: str) -> str:
        """`body` as the value to store, bound to `label` (which key, which ask) by the token."""
        if self.token is None:
            return body
        return json.dumps({"body": body, "mac": _mac(self.token, label, body)})

    def open(self, label: str, raw: bytes) -> str:
        """The body of a value written by `seal` with the same token and label; Unproven otherwise."""
        text = raw.decode(errors="replace")
        if self.token is None:
            return text
        try:
            sealed = json.loads(text)
            body, mac = str(sealed["body"]), str(sealed["mac"])
        except (ValueError, KeyError, TypeError):
            body, mac = "", ""
        if not mac or not hmac.compare_digest(mac, _mac(self.token, label, body)):
            raise Unproven(
                f"the weights rendezvous value for {label!r} does not carry the run's weights token's HMAC: "
                "someone without the token wrote it; refused"
            )
        return body
