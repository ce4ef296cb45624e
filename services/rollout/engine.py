"""`RolloutEngine`: one vLLM V1 `AsyncLLM` that samples prompt groups and reloads weights in place.

What it does
- `generate_group(task)` feeds the task's exact `prompt_token_ids` (a `TokensPrompt`, never
  re-tokenised text) with `SamplingParams(n, temperature, top_p, max_tokens, stop, seed,
  logprobs=0)` and returns a `Group`: per sample the response token ids, one behaviour
  log-prob per response token, the text, the finish reason and the policy version, token ids
  and floats packed little-endian with `meshrl.transport.bus.codec`. Any number of groups may run at
  once: AsyncLLM batches them (continuous batching). A task with `sampling.greedy_baseline`
  also gets one temperature-0 response in `Group.greedy_sample` (ReMax's baseline; a second
  request running beside the group's), never among the trained samples.
- `load_weights(path, version)` pauses the scheduler (in-flight requests are kept, or waited
  for), reloads every tensor of a checkpoint-format safetensors file into the live model
  through the worker extension (`worker_extension.py`), clears the prefix/KV cache, tags the
  engine with the new version and resumes. The engine is never restarted.

Which log-probs (behaviour log-probs, for the learner's importance ratio)
  The engine runs with `logprobs_mode="processed_logprobs"`: the log-prob of each sampled
  token under the distribution it was SAMPLED from, i.e.

      logprob_t = log_softmax(logits_t / T)[y_t]          (top_p = 1)

  restricted to and renormalised over the nucleus when top_p < 1. With top_p = 1 this is
  exactly what the learner computes (`meshrl.algos.logprobs`: `log_softmax(logits / T)`), at
  any temperature; at T = 1 it also equals vLLM's default raw log-probs. Greedy requests
  (T = 0) return `log_softmax(logits)`, so log-probs of greedy samples are taken at T = 1
  everywhere (the one rule, `meshrl/config/sampling.py`). Pass `logprobs_mode="raw_logprobs"` for the
  un-tempered model log-probs.

Policy versions
  The engine tells vLLM its version (`update_weight_version`), so every finished sample
  carries `weight_versions` spans. With `pause_mode="keep"` a sample may straddle an update:
  the pause clears the prefix cache, which preempts running requests, so on resume their
  KV is recomputed with the NEW weights and later tokens are sampled by them. Its
  `policy_version` is then the OLDEST version that produced any of its tokens (the
  conservative choice for staleness checks); its behaviour log-probs are still exact per
  token, since each token's log-prob came from the weights that sampled it.

Tied embeddings: a tied checkpoint has no `lm_head.weight`; vLLM's in-place reload would
leave the lm_head on the OLD matrix (silently: outputs match neither version). The worker
extension re-ties it after every reload; `test_engine.py` checks outputs against an HF
forward of the pushed weights.

LoRA (`model.lora.push: adapter`): the engine starts with vLLM's LoRA support
(`enable_lora`, `max_lora_rank` = the smallest rank vLLM serves ≥ model.lora.rank) and its
base weights never change. `load_adapter(dir, version)` adds the pushed adapter (a PEFT
directory) under a new id and name `policy-v<version>-<serial>`; every request submitted
after it carries that `LoRARequest`, and requests already running finish on the adapter they
started with (no pause: nothing they use changes). A sample's version is then exactly its
adapter's (`completion_version`), read from the request's own `LoRARequest`, not from the
engine's version spans (which stay at the base's 0). vLLM keeps up to `CPU_LORAS` adapters
(LRU); older ones are dropped by vLLM as new ones arrive.

Modules: vLLM is imported at the top here, so only what starts an engine imports this
module; its settings are `engine_config.py` (`EngineConfig`) and the completion → `Sample`
conversion is `samples.py`, both without vLLM.

Simplifications: one engine per process. Construct it in a service process or under
`if __name__ == "__main__":` (vLLM spawns its engine-core and worker processes). Start-up
≈25–35 s on CPU with `enforce_eager=True`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
import uuid
from pathlib import Path

from vllm import SamplingParams
from vllm.engine.arg_utils import AsyncEngineArgs
from vllm.inputs import TokensPrompt
from vllm.lora.request import LoRARequest
from vllm.platforms import current_platform
from vllm.sampling_params import RequestOutputKind
from vllm.v1.engine.async_llm import AsyncLLM

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.rollout.engine_config import EngineConfig, lora_args
from meshrl.services.rollout.ipc_folder import make_ipc_folder, vllm_binds_in
from meshrl.services.rollout.samples import adapter_name, sample_from_completion
from meshrl.transport.bus.codec import unpack_int32

GiB = 1 << 30
log = logging.getLogger(__name__)
WORKER_EXTENSION = "meshrl.services.rollout.worker_extension.WeightsFileExtension"
CPU_BATCHED_TOKENS = 8192  # tokens per engine step when prefills are not chunked (CPU)


def engine_args(config: EngineConfig):
    """vLLM `AsyncEngineArgs` for `config` (KV cache sized in bytes, our worker extension)."""

    if not Path(config.model, "config.json").exists():
        raise FileNotFoundError(
            f"model dir {config.model} has no config.json; point model.path at a Hugging Face model dir"
        )
    if os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
        log.warning(
            "VLLM_CPU_KVCACHE_SPACE=%s is set: on CPU vLLM uses it instead of rollout.kv_cache_gb="
            "%g; unset it to size the KV cache from the config",
            os.environ["VLLM_CPU_KVCACHE_SPACE"],
            config.kv_cache_gb,
        )
    return AsyncEngineArgs(
        model=config.model,
        tokenizer=config.tokenizer or config.model,
        dtype=config.dtype,
        max_model_len=config.max_model_len,
        enforce_eager=config.enforce_eager,
        seed=config.seed,
        kv_cache_memory_bytes=int(config.kv_cache_gb * GiB),
        logprobs_mode=config.logprobs_mode,
        max_num_seqs=config.max_num_seqs,
        worker_extension_cls=WORKER_EXTENSION,
        disable_log_stats=True,
        tensor_parallel_size=config.tensor_parallel_size,  # >1: one worker process per shard
        **{**lora_args(config), **platform_scheduling(config), **config.extra_engine_args},
    )


def platform_scheduling(config: EngineConfig) -> dict:
    """On CPU: whole-prompt prefills (no chunking).

    Every task carries a sampling seed (a resumed run must reproduce its samples). When
    vLLM chunks a seeded request's prefill it rewinds that request's torch.Generator with
    `get_offset()`, which CPU generators do not have: the engine core dies ("CPU Generator
    does not use offset") as soon as a large batch forces a chunk (64 groups of 200-token
    prompts do). GPU generators have offsets, so GPUs keep chunked prefill.
    """

    if not current_platform.is_cpu():
        return {}
    return {"enable_chunked_prefill": False, "max_num_batched_tokens": max(config.max_model_len, CPU_BATCHED_TOKENS)}


def sampling_params(sampling: pb.SamplingParams, *, greedy: bool = False):
    """vLLM SamplingParams from the proto; proto zeros mean "unset" (top_p 0 → 1, seed 0 → none).

    `greedy`: the task's greedy-baseline request instead — one response at temperature 0
    with the same max_tokens and stop (ReMax's baseline)."""
    if sampling.max_tokens < 1:
        raise ValueError(f"sampling.max_tokens={sampling.max_tokens}: set it to at least 1")
    shape = (
        dict(n=1, temperature=0.0, top_p=1.0, seed=None)
        if greedy
        else dict(
            n=max(1, sampling.n),
            temperature=sampling.temperature,
            top_p=sampling.top_p or 1.0,
            seed=sampling.seed or None,
        )
    )
    return SamplingParams(
        **shape,
        max_tokens=sampling.max_tokens,
        stop=list(sampling.stop) or None,
        logprobs=0,
        flat_logprobs=True,
        output_kind=RequestOutputKind.FINAL_ONLY,
    )


class RolloutEngine:
    """An AsyncLLM plus the policy version it holds. Build with `await RolloutEngine.start(cfg)`."""

    def __init__(self, llm, config: EngineConfig, version: int = 0):
        self.llm = llm
        self.config = config
        self.version = version
        self.groups_generated = 0
        self.tokens_generated = 0
        self.lora = None  # the LoRARequest new requests carry (None: the base weights)
        self._adapters_added = 0
        self._update_lock = asyncio.Lock()
        self.ipc_folder = None  # vLLM's zmq sockets (ipc_folder.py), removed at shutdown

    @classmethod
    async def start(cls, config: EngineConfig, version: int = 0) -> "RolloutEngine":
        """Construct the AsyncLLM (spawns vLLM's processes; blocks ≈30 s) and tag its version."""

        ipc_folder = make_ipc_folder()
        try:
            with vllm_binds_in(ipc_folder):
                llm = AsyncLLM.from_engine_args(engine_args(config))
        except BaseException:
            shutil.rmtree(ipc_folder, ignore_errors=True)
            raise
        engine = cls(llm, config, version)
        engine.ipc_folder = ipc_folder
        await llm.update_weight_version(str(version))
        return engine

    @property
    def alive(self) -> bool:
        """False once vLLM's engine core has died (AsyncLLM errored) or the engine was shut
        down: no request can be served any more (engine_watch.py acts on it)."""
        return self.llm is not None and not self.llm.errored

    @property
    def tokenizer(self):
        return self.llm.get_tokenizer()

    async def generate_group(self, task: pb.PromptTask) -> pb.Group:
        """Sample `task.sampling.n` responses to `task.prompt_token_ids` with the current weights."""

        prompt_ids = unpack_int32(task.prompt_token_ids)
        if prompt_ids.size == 0:
            raise ValueError(
                f"group {task.group_id!r} has empty prompt_token_ids; the learner "
                f"must tokenise the prompt before publishing it"
            )
        start, version_at_start = time.time(), self.version
        if too_long := self._prompt_too_long(task, prompt_ids.size):
            return pb.Group(
                run_id=task.run_id, group_id=task.group_id, task=task, drop_reason=too_long,
                policy_version=version_at_start, rollout_replica=self.config.replica_id,
            )  # fmt: skip
        prompt = TokensPrompt(prompt_token_ids=prompt_ids.tolist())
        requests = [self._final_output(prompt, sampling_params(task.sampling), task.group_id)]
        if task.sampling.greedy_baseline:  # batched with the group by vLLM, not after it
            requests.append(
                self._final_output(prompt, sampling_params(task.sampling, greedy=True), f"{task.group_id}-greedy")
            )
        final, *greedy = await asyncio.gather(*requests)
        samples = [sample_from_completion(c, version_at_start) for c in sorted(final.outputs, key=lambda c: c.index)]
        group = self._group(task, samples, start)
        if greedy:
            group.greedy_sample.CopyFrom(sample_from_completion(greedy[0].outputs[0], version_at_start))
            group.greedy_sample.index = len(samples)  # an id of its own for reward item ids
        return group

    async def generate_turn(
        self, prompt_ids: list[int], sampling: pb.SamplingParams, *, max_tokens: int, seed: int, name: str
    ):
        """One completion of `prompt_ids` (a turn of an episode: `agent/episode.py`) with the
        task's sampling but n=1, `max_tokens` and `seed` (0 = unseeded): vLLM's
        `CompletionOutput` (token ids, flat log-probs, text, finish reason, weight versions).
        Turns of many episodes run at once; AsyncLLM batches them like groups."""

        turn = pb.SamplingParams()
        turn.CopyFrom(sampling)
        turn.n, turn.max_tokens, turn.seed, turn.greedy_baseline = 1, max_tokens, seed, False
        final = await self._final_output(TokensPrompt(prompt_token_ids=list(prompt_ids)), sampling_params(turn), name)
        self.tokens_generated += len(final.outputs[0].token_ids)
        return final.outputs[0]

    async def _final_output(self, prompt, params, name: str):
        """vLLM's final RequestOutput for one request (all its `n` completions), served with
        the adapter held when it was submitted; each completion carries that `lora_request`."""
        request_id = f"{name or 'group'}-{uuid.uuid4().hex[:8]}"
        final, lora = None, self.lora
        async for output in self.llm.generate(prompt, params, request_id, lora_request=lora):
            final = output
        if final is None:
            raise RuntimeError(f"vLLM returned no output for request {request_id!r}")
        for completion in final.outputs:  # vLLM sets it on the RequestOutput only
            completion.lora_request = lora
        return final

    def _prompt_too_long(self, task: pb.PromptTask, prompt_tokens: int) -> str:
        """The drop reason of a prompt whose answer cannot fit the engine's context: vLLM would
        refuse the request on every redelivery until the task went to the dead letters, and the
        learner would wait for a group that never comes. "" when it fits."""
        limit, answer = self.config.max_model_len, task.sampling.max_tokens
        if prompt_tokens + answer <= limit:
            return ""
        return (
            f"prompt_too_long: group {task.group_id}: a prompt of {prompt_tokens} tokens and an answer of up "
            f"to {answer} do not fit rollout.max_model_len={limit}; raise rollout.max_model_len (the model's "
            f"context allowing) or shorten the prompts (data.max_prompt_tokens)"
        )

    def _group(self, task: pb.PromptTask, samples: list[pb.Sample], start: float) -> pb.Group:
        self.groups_generated += 1
        self.tokens_generated += sum(len(s.response_token_ids) // 4 for s in samples)
        timing = pb.StageTiming(
            stage="generate", service=self.config.replica_id, start_unix=start, end_unix=time.time()
        )
        return pb.Group(
            run_id=task.run_id,
            group_id=task.group_id,
            task=task,
            samples=samples,
            policy_version=min(s.policy_version for s in samples),
            rollout_replica=self.config.replica_id,
            timings=[timing],
        )

    async def load_weights(self, path: str | Path, version: int) -> float:
        """Reload the weights in place from a checkpoint-format safetensors file; return seconds.

        Pause (in-flight requests kept or waited for, per `pause_mode`) → reload → clear the
        prefix cache (done by the pause) → tag the version → resume. Raises if the file is
        unreadable or has no tensors; the version is then left unchanged.
        """
        if not Path(path).is_file():
            raise FileNotFoundError(
                f"weights file {path} does not exist; the notice must name a safetensors file readable on this host"
            )
        return await self._reload(
            "meshrl_reload_safetensors",
            (str(path),),
            version,
            empty=f"weights file {path} holds no tensors; the learner must write a full state dict",
        )

    async def load_adapter(self, directory: str | Path, version: int) -> float:
        """Serve the LoRA adapter in `directory` (PEFT's format) as `version` from the next
        request on; return seconds. Running requests keep theirs (module docstring)."""

        if not self.config.max_lora_rank:
            raise RuntimeError(
                f"weights v{version} are a LoRA adapter, but this engine was started "
                f"without LoRA; start the replica with the run's config "
                f"(model.lora with push: adapter)"
            )
        async with self._update_lock:
            began = time.perf_counter()
            serial = self._adapters_added + 1
            request = LoRARequest(adapter_name(version, serial), serial, str(directory))
            if not await self.llm.add_lora(request):
                raise RuntimeError(f"vLLM did not load the adapter in {directory}")
            self._adapters_added, self.lora, self.version = serial, request, version
            return time.perf_counter() - began

    async def receive_weights(self, address: str, ticket: int, manifest_json: str, version: int) -> float:
        """Reload the weights in place from the learner's collective transfer `ticket`
        (meshrl.transport.weights.collective); the same pause → reload → resume as a file."""
        return await self._reload(
            "meshrl_receive_collective",
            (address, ticket, manifest_json),
            version,
            empty=f"the transfer from {address} carried no tensors",
        )

    async def _reload(self, method: str, args: tuple, version: int, *, empty: str) -> float:
        async with self._update_lock:
            began = time.perf_counter()
            await self.llm.pause_generation(mode=self.config.pause_mode, clear_cache=True)
            try:
                counts = await self.llm.collective_rpc(method, args=args)
                if not all(counts):
                    raise RuntimeError(empty)
                await self.llm.update_weight_version(str(version))
                self.version = version
            finally:
                await self.llm.resume_generation()
            return time.perf_counter() - began

    async def weights_digest(self, name_filter: str = "embed_tokens") -> str:
        """sha256 of the live parameters whose names contain `name_filter` (see the extension)."""
        (digest, *_) = await self.llm.collective_rpc("meshrl_weights_digest", args=(name_filter,))
        return digest

    def shutdown(self) -> None:
        """Stop vLLM's processes (idempotent). vLLM's own `AsyncLLM.__del__` may still print a
        harmless TypeError at interpreter exit."""
        if self.llm is not None:
            llm, self.llm = self.llm, None
            llm.shutdown()
            del llm
        if self.ipc_folder is not None:
            shutil.rmtree(self.ipc_folder, ignore_errors=True)
            self.ipc_folder = None
