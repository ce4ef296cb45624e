"""Named devices a plan is checked against (`meshrl plan --device NAME`): usable memory in
bytes. GPU sizes are the cards' memory as the driver reports it (what torch can allocate is a
little less); `cpu` is this host's RAM."""

from __future__ import annotations

GiB = 1024**3

DEVICES = {
    "h200": 141 * 10**9,
    "h100-80gb": 80 * GiB,
    "a100-80gb": 80 * GiB,
    "a100-40gb": 40 * GiB,
    "l40s": 48 * GiB,
    "a10g": 24 * GiB,
    "l4": 24 * GiB,
    "rtx4090": 24 * GiB,
}


def device_bytes(name: str) -> int:
    """Usable bytes of a named device; `cpu` is the host's RAM. ValueError names the choices."""
    if name == "cpu":
        import psutil  # lazy: only for the cpu device

        return psutil.virtual_memory().total
    if name not in DEVICES:
        raise ValueError(f"--device {name!r} is unknown; choose one of: cpu, {', '.join(DEVICES)}")
    return DEVICES[name]
