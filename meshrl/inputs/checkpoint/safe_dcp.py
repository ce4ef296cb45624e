"""Read a torch.distributed.checkpoint folder without executing anything it contains.

DCP pickles two things, and its reader unpickles both with no restriction: the folder's
`.metadata` (`pickle.load`) and every non-tensor value of the state dict (an optimizer's
`lr`, `betas`, ...: `torch.load(weights_only=False)` in DefaultLoadPlanner). A crafted
checkpoint thereby ran code on resume, eval, export and the gateway's ExportRun. Here:

- `SafeReader.read_metadata` unpickles `.metadata` with an allow-list of the classes DCP
  itself writes there (its metadata dataclasses, torch.Size, dtypes, layouts, PosixPath);
  anything else is refused with UnsafeCheckpoint naming the module and name;
- `SafePlanner.load_bytes` reads values with `torch.load(weights_only=True)` (numbers,
  strings, lists, dicts, tuples, tensors).

    dcp.load(state_dict, storage_reader=SafeReader(path), planner=SafePlanner())

Tensors were already read with `weights_only=True` by DCP itself.
"""

from __future__ import annotations

import pickle

import torch
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint._traverse import set_element
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta

from meshrl.inputs.checkpoint.errors import CheckpointError

DCP_MODULES = ("torch.distributed.checkpoint.metadata",)
ALLOWED = {
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
    ("torch", "Size"),
    ("torch.serialization", "_get_layout"),
    ("pathlib", "PosixPath"),
    ("collections", "OrderedDict"),
}


class UnsafeCheckpoint(CheckpointError):
    """A checkpoint file asks to load something that is not plain data."""


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        value = getattr(torch, name, None) if module == "torch" else None
        if (module, name) in ALLOWED or module in DCP_MODULES or isinstance(value, torch.dtype):
            return super().find_class(module, name)
        raise UnsafeCheckpoint(
            f"the checkpoint's DCP metadata asks to load {module}.{name}, which is not one "
            "of the plain-data classes torch.distributed.checkpoint writes there; refusing "
            "to unpickle it (a crafted or foreign checkpoint)"
        )


class SafeReader(FileSystemReader):
    """FileSystemReader whose metadata is unpickled against an allow-list."""

    def read_metadata(self, *args, **kwargs) -> Metadata:
        rank = kwargs.get("rank")
        with self.fs.create_stream(self._get_metadata_path(rank), "rb") as stream:
            metadata = _MetadataUnpickler(stream).load()
        if not isinstance(metadata, Metadata):
            raise UnsafeCheckpoint(f"the checkpoint's DCP metadata holds a {type(metadata).__name__}, not Metadata")
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


class SafePlanner(DefaultLoadPlanner):
    """DefaultLoadPlanner whose non-tensor values are read with weights_only=True."""

    def load_bytes(self, read_item, value) -> None:
        try:
            loaded = torch.load(value, weights_only=True)
        except pickle.UnpicklingError as err:
            raise UnsafeCheckpoint(
                f"the checkpoint's value {read_item.dest_index.fqn!r} is not plain data "
                f"(weights_only refused it: {str(err).splitlines()[0]})"
            ) from None
        if self.flatten_state_dict:  # as DefaultLoadPlanner.load_bytes does with what it loaded
            set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], loaded)
        else:
            self.state_dict[read_item.dest_index.fqn] = loaded


def unsafe_cause(err: BaseException) -> UnsafeCheckpoint | None:
    """The UnsafeCheckpoint behind a DCP error (DCP wraps a reader's errors per rank), if any."""
    if isinstance(err, UnsafeCheckpoint):
        return err
    for wrapped in (getattr(err, "failures", None) or {}).values():
        inner = getattr(wrapped, "exception", wrapped)
        if isinstance(inner, UnsafeCheckpoint):
            return inner
    return unsafe_cause(err.__cause__) if err.__cause__ is not None else None
