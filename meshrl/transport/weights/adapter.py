"""A LoRA adapter as one weights file, both sides: what the learner pushes when it trains LoRA
(`model.lora.push: adapter`), and the directory vLLM loads it from on the rollout side.

vLLM loads an adapter from a directory in PEFT's format (`adapter_config.json` +
`adapter_model.safetensors`). The transports carry one file with one digest, so the learner
writes the adapter's tensors (PEFT's names) as safetensors with PEFT's config JSON in the
file's metadata under `CONFIG_KEY`, and the notice says `format: peft_adapter`. The digest
and the notice's signature then cover the config as well as the tensors.

On the rollout side, after `open_verified` checked the bytes, `AdapterDirs.unpack` copies
them from that open file (never from its name) into a new private directory of this replica
with the config written beside them, and vLLM loads that directory. vLLM may read the
directory again later (an adapter its LRU cache evicted and a running request still uses), so
the last `KEEP_ADAPTERS` directories stay; older ones are removed, and all at `close()`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from meshrl.private_files import write_private_file
from meshrl.transport.private_paths import make_private_dir
from meshrl.transport.weights.notice import WeightsRejected

ADAPTER_FORMAT = "peft_adapter"
CONFIG_KEY = "peft_adapter_config"
CONFIG_NAME, WEIGHTS_NAME = "adapter_config.json", "adapter_model.safetensors"  # PEFT's file names
KEEP_ADAPTERS = 3
COPY_CHUNK = 8 << 20


def adapter_metadata(config_json: str) -> dict[str, str]:
    """The safetensors metadata of an adapter file: PEFT's config beside the format tag."""
    return {"format": "pt", CONFIG_KEY: config_json}


def adapter_config(path: str | Path, version: int) -> dict:
    """PEFT's config carried in an adapter file's metadata; WeightsRejected when it has none."""
    from safetensors import safe_open  # lazy: safetensors imports torch's side only when asked

    with safe_open(str(path), framework="pt") as opened:
        text = (opened.metadata() or {}).get(CONFIG_KEY)
    try:
        config = json.loads(text) if text else None
    except json.JSONDecodeError as err:
        raise WeightsRejected(f"adapter v{version}: its {CONFIG_KEY} metadata is not JSON ({err})") from None
    if not isinstance(config, dict) or config.get("peft_type") != "LORA":
        raise WeightsRejected(
            f"adapter v{version}: the file carries no PEFT LoRA config under "
            f"{CONFIG_KEY!r}; the learner must push it with model.lora.push=adapter"
        )
    return config


def copy_open_file(fd: int, dest: Path) -> int:
    """Copy an open file's bytes (from its start) into a new 0600 file `dest`; bytes copied."""
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    size = 0
    try:
        while chunk := os.pread(fd, COPY_CHUNK, size):
            os.write(out, chunk)
            size += len(chunk)
    finally:
        os.close(out)
    return size


class AdapterDirs:
    """This replica's adapter directories, one per loaded version (module docstring)."""

    def __init__(self, root: Path, prefix: str):
        self.root, self.prefix = Path(root), prefix
        self.dirs: list[Path] = []

    def unpack(self, opened, version: int) -> Path:
        """A PEFT adapter directory of the verified open file `opened` (an `OpenedWeights`)."""
        config = adapter_config(opened.path, version)
        path = make_private_dir(self.root, f"{self.prefix}-adapter-v{version}")
        try:
            write_private_file(path / CONFIG_NAME, json.dumps(config, indent=2).encode())
            copy_open_file(opened.fd, path / WEIGHTS_NAME)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        self.dirs.append(path)
        for old in self.dirs[:-KEEP_ADAPTERS]:
            shutil.rmtree(old, ignore_errors=True)
        self.dirs = self.dirs[-KEEP_ADAPTERS:]
        return path

    def close(self) -> None:
        for path in self.dirs:
            shutil.rmtree(path, ignore_errors=True)
        self.dirs = []
