"""Methods mixed into vLLM's worker (`worker_extension_cls`) for in-place weight reloads.

vLLM runs the model in a worker process; the front end reaches it only through
`collective_rpc(method_name, args=...)`, whose arguments are serialised (torch tensors
arrive as plain lists in multiprocess mode). So the front end sends a *path*: the worker
opens the safetensors file itself (memory-mapped; from `/dev/shm` this is a page-cache
read) and streams its tensors into `Worker.reload_weights(weights_iterator=...,
is_checkpoint_format=True)`, which re-runs each layer's weight loader and post-processing
(CPU linear layers are repacked after loading, so `model.load_weights()` on the live model
is not enough: it finds zero-size packed weights). With `weights_transport: collective` it
sends a ticket instead, and the worker receives the tensors from the learner itself over a
two-member process group (meshrl.transport.weights.collective); one worker per engine, so
tensor-parallel engines use the file transports.

Used by `RolloutEngine` as `worker_extension_cls="meshrl.services.rollout.worker_extension.WeightsFileExtension"`;
never imported by the front end itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import torch

from meshrl.services.rollout.idle_spin import shorten_idle_spin

# This module is imported only inside vLLM's worker process: the place to stop its spin.
shorten_idle_spin()


def _safetensors_items(path: str) -> Iterator[tuple[str, torch.Tensor]]:
    """(name, tensor) for every tensor in a safetensors file, read lazily."""
    from safetensors import safe_open  # lazy: only in vLLM's worker process, when weights arrive

    with safe_open(path, framework="pt", device="cpu") as handle:
        for name in handle.keys():
            yield name, handle.get_tensor(name)


class WeightsFileExtension:
    """Mixed into vLLM's `Worker`: `self` is the worker, `self.model_runner` its runner."""

    def meshrl_reload_safetensors(self, path: str) -> int:
        """Load every tensor of the checkpoint-format file at `path` into the live model.

        Returns the number of tensors read, so the caller can tell an empty file apart.
        """
        return self._meshrl_load(_safetensors_items(path))

    def meshrl_receive_collective(self, address: str, ticket: int, manifest_json: str) -> int:
        """Receive the learner's tensors for `ticket` over the pair group
        (meshrl.transport.weights.collective) and load them as a file's would be."""
        from meshrl.transport.weights.collective import (
            Manifest,
            receive,
        )  # lazy: only in vLLM's worker process, and only for the collective transport (nats)

        device = next(self.model_runner.get_model().parameters()).device
        return self._meshrl_load(receive(address, ticket, Manifest.from_json(manifest_json), device))

    def _meshrl_load(self, stream: Iterator[tuple[str, torch.Tensor]]) -> int:
        """Stream (name, tensor) pairs into vLLM's layerwise reload; returns how many came.
        The stream is drained even if the loader stops early: a collective sender
        broadcasts every tensor, and a half-read transfer would leave it waiting."""
        names: list[str] = []

        def counted() -> Iterator[tuple[str, torch.Tensor]]:
            for name, tensor in stream:
                names.append(name)
                yield name, tensor

        self.reload_weights(weights_iterator=counted(), is_checkpoint_format=True)
        names.extend(name for name, _ in stream)
        self._meshrl_retie_lm_head()
        return len(names)

    def _meshrl_retie_lm_head(self) -> None:
        """Point a tied `lm_head` at the freshly loaded embedding again.

        A tied checkpoint has no `lm_head.weight`, so the layerwise reload loads nothing
        into the lm_head layer and puts its OLD kernel tensors back (logged as
        "ParallelLMHead: Failed to load weights"); on CPU its prepacked GEMM closure also
        still holds the old matrix. Re-tying and re-running its post-load processing makes
        the logits use the new embedding, as a fresh load would.
        """
        model = self.model_runner.get_model()
        hf_config = self.vllm_config.model_config.hf_text_config
        lm_head = getattr(model, "lm_head", None)
        embed = getattr(getattr(model, "model", None), "embed_tokens", None)
        if not getattr(hf_config, "tie_word_embeddings", False) or lm_head is None or embed is None:
            return
        lm_head.tie_weights(embed)
        lm_head.quant_method.process_weights_after_loading(lm_head)

    def meshrl_weights_digest(self, name_filter: str = "embed_tokens") -> str:
        """sha256 over the raw bytes of the model parameters whose name contains `name_filter`.

        Only parameters stored unpacked are meaningful to compare with a checkpoint (the
        embedding is; CPU-repacked linear weights are not), hence the filter.
        """
        digest = hashlib.sha256()
        for name, param in sorted(self.model_runner.model.named_parameters()):
            if name_filter in name:
                flat = param.detach().to("cpu", torch.float32).contiguous().view(-1)
                digest.update(flat.view(torch.uint8).numpy().tobytes())
        return digest.hexdigest()
