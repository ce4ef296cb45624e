"""NatsCluster: N clustered nats-servers with JetStream on loopback (tests, a local drill).

    with NatsCluster(tmp / "nats", size=3) as cluster:
        bus = await Bus.connect(cluster.url, run_id, name="x", replicas=3)
        cluster.kill(cluster.node_of(bus.nc.connected_url))   # the run pauses, then goes on

Each node is an EmbeddedNats with its own client port, cluster (route) port, HTTP
monitoring port, JetStream store dir and `server_name` (clustered JetStream needs one),
and routes to every other node under one cluster name. `url` is the comma-separated list
of every node's client URL, which Bus.connect takes, so clients fail over.
The constructor returns once every node agrees on a JetStream meta leader (streams can
be created). Simplification: one host, no auth, no TLS; production clusters come from the
official chart or a StatefulSet (deploy/k8s), never from this class.
"""

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import ParseResult, urlparse

from meshrl.addresses import free_port
from meshrl.transport.bus.errors import BusUnavailable
from meshrl.transport.bus.server import EmbeddedNats

HOST = "127.0.0.1"
META_LEADER_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class NodeSpec:
    """Everything that must stay the same when a node is restarted on its store."""

    name: str
    client_port: int
    route_port: int
    http_port: int

    @property
    def url(self) -> str:
        return f"nats://{HOST}:{self.client_port}"

    def config(self, cluster_name: str, peers: list["NodeSpec"]) -> str:
        routes = ", ".join(f'"nats-route://{HOST}:{p.route_port}"' for p in peers if p.name != self.name)
        return (
            f'server_name: "{self.name}"\n'
            f'http: "{HOST}:{self.http_port}"\n'
            f'cluster {{\n  name: "{cluster_name}"\n  listen: "{HOST}:{self.route_port}"\n'
            f"  routes: [{routes}]\n}}\n"
        )


def _get_json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as resp:
            return json.load(resp)
    except (OSError, urllib.error.URLError, ValueError):
        return None


class NatsCluster:
    """`size` clustered nodes named n1..nN; stopped on close() / context exit."""

    def __init__(self, store_root, size: int = 3, *, name: str = "meshrl"):
        if size < 1:
            raise ValueError(f"size={size}: a cluster needs at least one node")
        self.store_root, self.name = Path(store_root), name
        self.specs = [NodeSpec(f"n{i + 1}", free_port(HOST), free_port(HOST), free_port(HOST)) for i in range(size)]
        self.nodes: dict[str, EmbeddedNats] = {}
        try:
            for spec in self.specs:
                self.start(spec.name)
            self.wait_for_meta_leader()
        except BaseException:
            self.close()
            raise

    @property
    def urls(self) -> list[str]:
        return [spec.url for spec in self.specs]

    @property
    def url(self) -> str:
        """Every node's client URL, comma-separated: what Bus.connect and `nats.url` take."""
        return ",".join(self.urls)

    def spec(self, node: str) -> NodeSpec:
        for spec in self.specs:
            if spec.name == node:
                return spec
        raise KeyError(f"no node {node!r} in cluster {self.name!r}: nodes are {[s.name for s in self.specs]}")

    def node_of(self, url) -> str:
        """The node name behind a client URL: a string, or nats-py's `connected_url` (a ParseResult)."""
        port = (url if isinstance(url, ParseResult) else urlparse(str(url))).port
        for spec in self.specs:
            if spec.client_port == port:
                return spec.name
        raise KeyError(f"{url} is not a client URL of cluster {self.name!r} ({self.url})")

    def start(self, node: str) -> None:
        """Start (or restart, on the same ports and store) one node."""
        spec = self.spec(node)
        self.nodes[node] = EmbeddedNats(
            self.store_root / node, port=spec.client_port, extra_config=spec.config(self.name, self.specs)
        )

    def kill(self, node: str) -> None:
        """SIGKILL one node (a crash): its peers must elect new leaders without it."""
        self.nodes[node].kill()

    def alive(self) -> list[str]:
        return [name for name, server in self.nodes.items() if server.alive()]

    def meta_leader(self) -> str | None:
        """The JetStream meta leader every live node reports, or None while they disagree."""
        seen = set()
        for node in self.alive():
            jsz = _get_json(f"http://{HOST}:{self.spec(node).http_port}/jsz") or {}
            seen.add((jsz.get("meta_cluster") or {}).get("leader"))
        return seen.pop() if len(seen) == 1 else None

    def wait_for_meta_leader(self, timeout: float = META_LEADER_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leader = self.meta_leader()
            if leader:
                return leader
            time.sleep(0.1)
        logs = "\n".join(f"--- {n}:\n{self.nodes[n]._server_output(tail=1500)}" for n in self.alive())
        raise BusUnavailable(
            f"NATS cluster {self.name!r} ({self.url}) elected no JetStream meta leader within "
            f"{timeout:.0f} s; server output:\n{logs}"
        )

    def close(self) -> None:
        """Stop every node; safe to call twice."""
        for server in self.nodes.values():
            server.close()

    def __enter__(self) -> "NatsCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
