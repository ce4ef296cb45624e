"""Object-store throughput for a weights-sized file vs a plain local disk copy.

Starts an EmbeddedNats in a temp dir, puts a random file with WeightsStore.put_file, reads
it back with get_file (sha256 and size verified) and get_bytes, and prints MB/s next to
`shutil.copyfile` of the same file. Numbers include the sha256 checks.

    .venv/bin/python benchmarks/bus_objectstore.py            # 538 MB (SmolLM2-135M fp32)
    .venv/bin/python benchmarks/bus_objectstore.py --mb 64
"""

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from meshrl.transport.bus import Bus, EmbeddedNats


def make_file(path: Path, size: int) -> None:
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for _ in range(size // len(block)):
            f.write(block)
        f.write(os.urandom(size % len(block)))


def rate(size: int, seconds: float) -> str:
    return f"{size / seconds / 1e6:8.0f} MB/s ({seconds:.2f} s)"


async def measure(url: str, src: Path, work: Path, size: int) -> None:
    bus = await Bus.connect(url, "bench", name="bench")
    await bus.ensure_streams()
    t = time.perf_counter()
    await bus.weights.put_file("w", src)
    print(f"put_file   {rate(size, time.perf_counter() - t)}")
    t = time.perf_counter()
    await bus.weights.get_file("w", work / "back")
    print(f"get_file   {rate(size, time.perf_counter() - t)}")
    t = time.perf_counter()
    await bus.weights.get_bytes("w")
    print(f"get_bytes  {rate(size, time.perf_counter() - t)}")
    await bus.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=538)
    args = ap.parse_args()
    size = args.mb * 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        make_file(work / "src", size)
        t = time.perf_counter()
        shutil.copyfile(work / "src", work / "copy")
        print(f"disk copy  {rate(size, time.perf_counter() - t)}")
        (work / "copy").unlink()
        with EmbeddedNats(work / "nats") as server:
            asyncio.run(measure(server.url, work / "src", work, size))


if __name__ == "__main__":
    main()
