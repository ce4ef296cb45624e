"""Issue 11's deploy figures: (a) how long a new rollout replica takes to join a running run
over the object store; (b) an object-store weight push across network namespaces vs on one host.

(a) join: the multi-host drill's mesh (tests/deploy/test_multihost_drill.py: compose's commands
    and environment, the tiny model, weights_transport objectstore, no reference): nats,
    learner, rollout-a and reward each on its own host. Once the learner has pushed a version,
    rollout-b starts on its own host and is polled every 0.2 s with RolloutService.GetStatus
    (meshrl.run.status.rollout_status): times from its start to its gRPC answering,
    to `ready` (it holds the run's current weights, fetched from the object store), to its
    first generated group, and its log's first weights load (when, and how long it took).
    Dominated by vLLM's start; the weights are the tiny model's (see (b) for 538 MB).
(b) push: benchmarks/bus_objectstore.measure (put_file, get_file, get_bytes of an --mb random
    file, sha256 checked) by a client on one host against nats-server on another, then both
    on one host (loopback), in the same way (separate processes).

Hosts are network namespaces on a bridge (tests/deploy/netns.py; needs root); where they
cannot be made, every host is 127.0.0.1 (netns.Loopback) and the output says so, and (b)
has no "across" row.

    sudo .venv/bin/python benchmarks/deploy_join.py                # both; 538 MB (SmolLM2-135M fp32)
    sudo .venv/bin/python benchmarks/deploy_join.py --only push --mb 64
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bus_objectstore import make_file  # noqa: E402
from meshrl.addresses import free_port  # noqa: E402
from meshrl.transport.bus.server import find_nats_server  # noqa: E402
from tests.deploy import netns  # noqa: E402
from tests.deploy.test_multihost_drill import (  # noqa: E402
    HOSTS,
    Mesh,
    drill_config,
    nats_argv,
    nats_users,
    steps_done,
    wait_for,
)

MEASURE = (
    "import asyncio, sys; from pathlib import Path; from benchmarks.bus_objectstore import measure; "
    "asyncio.run(measure(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])))"
)


def make_hosts(numbers: dict[str, int]):
    """(hosts, what they are): namespaces when this machine allows, else loopback."""
    reason = netns.available()
    if reason is None:
        return netns.Hosts(numbers, prefix="mrj"), "network namespaces (veth + bridge, 10.78.0.0/24)"
    return netns.Loopback(numbers), f"loopback 127.0.0.1 (no namespaces: {reason})"


def start_nats(hosts, host: str, store: Path, port: int) -> subprocess.Popen:
    return hosts.popen(
        host,
        [str(find_nats_server()), "-js", "-sd", str(store), "-a", "0.0.0.0", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def measure_push(hosts, client: str, url: str, src: Path, work: Path, size: int) -> str:
    """benchmarks/bus_objectstore.measure run by a process on `client`; its output lines."""
    work.mkdir(exist_ok=True)
    proc = hosts.popen(
        client,
        [sys.executable, "-c", MEASURE, url, str(src), str(work), str(size)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        text=True,
    )
    out, _ = proc.communicate(timeout=600)
    return out.strip()


def push_figures(tmp: Path, mb: int) -> None:
    size = mb * 1_000_000
    make_file(tmp / "src", size)
    hosts, what = make_hosts({"nats": 1, "learner": 2})
    with hosts:
        rows = [("one host (loopback)", netns.Loopback({}), "127.0.0.1")]
        if isinstance(hosts, netns.Hosts):
            rows.insert(0, ("across namespaces", hosts, hosts.ip("nats")))
        print(f"(b) object-store push of {mb} MB; hosts: {what}")
        for label, where, ip in rows:
            port = free_port()
            server = start_nats(where, "nats", tmp / f"store-{port}", port)
            try:
                time.sleep(1.0)  # nats-server listens within milliseconds; JetStream needs a moment
                print(f"  {label} (client {'learner host' if where is hosts else 'this host'} → nats {ip}:{port})")
                print(
                    "    "
                    + measure_push(
                        where, "learner", f"nats://{ip}:{port}", tmp / "src", tmp / f"work-{port}", size
                    ).replace("\n", "\n    ")
                )
            finally:
                server.terminate()
                server.wait(10)


async def poll_rollout(address: str) -> dict:
    from meshrl.run.status import rollout_status

    return await rollout_status(address, 1.0)


def watch_join(mesh: Mesh, address: str, t0: float, timeout_s: float = 900.0) -> dict[str, float]:
    """Seconds from t0 to: gRPC answering, ready (current weights held), first group."""
    seen: dict[str, float] = {}
    deadline = t0 + timeout_s
    while "first_group_s" not in seen:
        assert time.monotonic() < deadline, f"rollout-b did not join in {timeout_s:.0f} s\n{mesh.tail('rollout-b')}"
        dead = {h: p.returncode for h, p in mesh.procs.items() if p.poll() is not None}
        assert not dead, f"died: {dead}\n" + "\n".join(mesh.tail(h) for h in dead)
        status = asyncio.run(poll_rollout(address))
        now = time.monotonic() - t0
        if "error" not in status:
            seen.setdefault("grpc_s", now)
            if status["ready"]:
                seen.setdefault("ready_s", now)
                seen.setdefault("version", status["weights_version"])
            if status["groups_generated"] >= 1:
                seen["first_group_s"] = now
        time.sleep(0.2)
    return seen


LOADED = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*rollout-b: loaded weights v(\d+) "
    r"\(([\d.]+) MB, objectstore\) in ([\d.]+) s",
    re.M,
)


def first_load(log: str, t0_wall: float) -> str:
    """rollout-b's first weights load as its log tells it: when (from its start), and how long the
    engine's in-place reload took (the fetch from the object store comes before it)."""
    found = LOADED.search(log)
    if found is None:
        return "not in its log"
    stamp, version, mb, took = found.groups()
    at = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() - t0_wall
    return f"v{version} ({mb} MB, object store) loaded {at:.1f} s after its start (the engine's reload: {took} s)"


def join_figures(tmp: Path) -> None:
    from meshrl.inputs.data.arithmetic import arithmetic_rows
    from meshrl.inputs.data.load import write_rows
    from meshrl.inputs.models.tiny import build_tiny_model_dir

    model = build_tiny_model_dir(tmp / "model")
    data = {"train": str(write_rows(tmp / "train.jsonl", arithmetic_rows(512, seed=0)))}
    cfg = drill_config(str(model), data, tmp / "run")
    cfg["learner"]["steps"] = 100_000  # stopped once rollout-b has joined
    (tmp / "config.yaml").write_text(yaml.safe_dump(cfg))
    (tmp / "logs").mkdir()
    hosts, what = make_hosts(HOSTS)
    loopback = isinstance(hosts, netns.Loopback)
    nats_port = free_port() if loopback else 4222
    env = {"MESHRL_NATS_URL": f"nats://127.0.0.1:{nats_port}", "MESHRL_ADVERTISE_HOST": "127.0.0.1"} if loopback else {}
    ports = {h: (free_port() if loopback else None) for h in ("rollout-a", "rollout-b", "reward")}
    with hosts:
        run_id = f"join-{uuid.uuid4().hex[:8]}"
        users = nats_users(tmp / "nats-auth", run_id, tmp / "config.yaml")  # compose's NATS users
        mesh = Mesh(hosts, tmp / "logs", run_id, tmp / "config.yaml", env=env, secrets=users)
        try:
            mesh.start("nats", nats_argv(tmp / "nats-store", nats_port, users), dict(os.environ))
            mesh.start_service("learner", "learner")
            mesh.start_service("rollout-a", "rollout", ports["rollout-a"])
            mesh.start_service("reward", "reward", ports["reward"])
            wait_for(lambda: steps_done(tmp / "run") >= 2, 900, "two steps (version 2 in the object store)", mesh)
            t0, t0_wall = time.monotonic(), time.time()
            mesh.start_service("rollout-b", "rollout", ports["rollout-b"])
            address = f"127.0.0.1:{ports['rollout-b']}" if loopback else f"{hosts.ip('rollout-b')}:50051"
            seen = watch_join(mesh, address, t0)
            steps = steps_done(tmp / "run")
            load = first_load((tmp / "logs" / "rollout-b.log").read_text(errors="replace"), t0_wall)
        finally:
            mesh.stop_all()
    print(f"(a) a new rollout replica joins a running run over the object store; hosts: {what}")
    print(f"  its log          {load}")
    print(f"  gRPC answering   {seen['grpc_s']:6.1f} s after its start (the engine is up)")
    print(f"  ready            {seen['ready_s']:6.1f} s (holds the run's current version, {seen['version']})")
    print(f"  first group      {seen['first_group_s']:6.1f} s   (the run was at step {steps})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["join", "push"], help="one of the two figures")
    ap.add_argument("--mb", type=int, default=538, help="object-store push size in MB (default 538)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="deploy_join_") as tmp:
        for name, figures in (("push", lambda d: push_figures(d, args.mb)), ("join", join_figures)):
            if args.only in (None, name):
                (Path(tmp) / name).mkdir()
                figures(Path(tmp) / name)


if __name__ == "__main__":
    main()
