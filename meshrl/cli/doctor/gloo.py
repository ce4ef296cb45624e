"""A 2-rank gloo all-reduce on 127.0.0.1: does torch.distributed work here at all?

Each rank contributes [rank + 1, 10 × (rank + 1)]; the sum over 2 ranks must be [3, 30].
Runs in spawned processes (what torchrun and the learner do), bounded by a timeout.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import timedelta

from meshrl.addresses import free_port
from meshrl.cli.doctor.check import Check, failed, passed

WORLD = 2
TIMEOUT_S = 120.0  # two ranks each import torch, which takes long on a loaded small host
EXPECTED = [3.0, 30.0]
FIX = (
    "torch.distributed cannot talk over loopback: check that 127.0.0.1 is reachable, no firewall "
    "blocks local TCP ports, and set GLOO_SOCKET_IFNAME=lo if the host has several interfaces"
)


def _rank_main(rank: int, port: int, world: int) -> None:
    import torch  # lazy: torch, only when this check runs (--skip gloo)
    import torch.distributed as dist  # lazy: torch, only when this check runs (--skip gloo)

    if "GLOO_SOCKET_IFNAME" not in os.environ and any(n == "lo" for _, n in socket.if_nameindex()):
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=timedelta(seconds=TIMEOUT_S)
    )
    try:
        t = torch.tensor([rank + 1.0, 10.0 * (rank + 1)])
        dist.all_reduce(t)
        if t.tolist() != EXPECTED:
            raise RuntimeError(f"all_reduce gave {t.tolist()} on rank {rank}, expected {EXPECTED}")
    finally:
        dist.destroy_process_group()


def check_gloo(ctx, timeout_s: float = TIMEOUT_S) -> Check:
    import torch.multiprocessing as mp  # lazy: torch, only when this check runs (--skip gloo)

    name = "gloo all-reduce (2 ranks)"
    start = time.monotonic()
    procs = mp.start_processes(_rank_main, args=(free_port(), WORLD), nprocs=WORLD, join=False, start_method="spawn")
    try:
        while not procs.join(timeout=0.5):
            if time.monotonic() - start > timeout_s:
                return failed(name, f"ranks did not finish within {timeout_s:g} s", FIX)
    except Exception as err:  # ProcessRaisedException / ProcessExitedException
        return failed(name, f"a rank failed: {str(err).strip().splitlines()[-1]}", FIX)
    finally:
        for p in procs.processes:
            if p.is_alive():
                p.terminate()
    return passed(name, f"sum {EXPECTED} over {WORLD} ranks on 127.0.0.1 in {time.monotonic() - start:.1f} s")
