"""The learner on N torchrun ranks: rank 0 runs the service, ranks > 0 follow its commands.

    torchrun --standalone --nproc_per_node 2 -m meshrl.services.learner --nats URL \
        --run-id RUN --config RUN_DIR/config.yaml [--resume RUN_DIR]

(the local launcher does this when `learner.ranks` > 1, through `ranks_run.py`, which keeps a
rank's exit code 2; `learner.ranks` must equal torchrun's world size). Rank 0 alone talks to NATS, gRPC
and the run dir's logs: it feeds prompts, gathers groups, keeps the ledger, metrics, alerts,
the control server and the weights push. Every rank holds its FSDP2 shard of the model and
of the AdamW state (train/fsdp.py) and trains its share of each batch.

Rank 0 drives the others with one `scatter_object_list` per command, each rank receiving
its own `(name, *args)` (`Leader.send`; the followers run `follow`):

    ("step", rows, step)        train on these rows: whole groups, the same row count on
                                every rank (the step's estimator is per rank, and every rank
                                must enter the same number of FSDP collectives)
    ("export",)                 gather the full state dict (the weights push; rank 0 keeps it)
    ("save", step, tag)         write a checkpoint (DCP: every rank writes its shards)
    ("restore", source)         load a checkpoint (DCP reshards: any saved world size)
    ("final", out_dir)          the final Hugging Face model dir (gathered on rank 0)
    ("stop",)                   leave the loop, exit 0

Rank 0 sends a command and then does the same work itself, on the trainer thread, so every
collective inside (the step's all-reduces, FSDP's gathers, DCP's barriers) is entered by
all ranks in one order. The commands travel on a gloo group of their own with a long
timeout: a follower waits there while rank 0 gathers groups or the run is paused, which may
take longer than the default 30 minutes of the training group's collectives.

Signals: a follower ignores SIGTERM/SIGINT once it has joined (torchrun forwards them to
every rank); rank 0 finishes the step, checkpoints with the followers and then stops them.
Each rank dies with torchrun (PR_SET_PDEATHSIG), so nothing outlives a killed launcher.

Simplifications: one batch per step split in contiguous whole groups (with several
mini-batches a rank's mini-batch holds other rows than one process's would; one
mini-batch matches one process to 1e-5: tests/unit/services/learner/train/test_fsdp.py); online algorithms
only (the config refuses `ranks` > 1 for offline DPO).
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import threading
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist

from meshrl.algos.kl_control import restore_controller
from meshrl.config import ConfigError, load_config
from meshrl.config.lora import pushes_adapter
from meshrl.private_files import keep_new_files_private
from meshrl.service.errors import startup_errors
from meshrl.services.learner import build
from meshrl.services.learner.checkpointing import LearnerCheckpoints
from meshrl.services.learner.train.fsdp import DistContext, init_distributed

log = logging.getLogger("meshrl.learner")
COMMAND_WAIT = timedelta(days=30)  # a follower waits this long for rank 0's next command
_COMMANDS: dict[str, Any] = {}  # the command group, made once by join()


def under_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def join(ranks: int) -> DistContext:
    """A world of one (no process group) outside torchrun, else this rank's place in it; every
    rank calls this first, in the same order (the command group is a collective). `ranks` is
    `learner.ranks`: torchrun must have started exactly that many."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != ranks:
        raise ConfigError(
            f"learner.ranks={ranks}, but torchrun started {world} rank(s) (WORLD_SIZE={world}): "
            f"set learner.ranks: {world} in the run config, or start {ranks} rank(s)"
        )
    if not under_torchrun():
        return DistContext()
    die_with_parent()
    ctx = init_distributed()
    _COMMANDS["group"] = dist.new_group(backend="gloo", timeout=COMMAND_WAIT)
    log.info("rank %d of %d joined (%s)", ctx.rank, ctx.world_size, dist.get_backend())
    return ctx


def die_with_parent() -> None:
    """torchrun starts each rank in a session of its own: a SIGKILLed torchrun would leave
    them running. Linux only; elsewhere a no-op."""
    if os.uname().sysname == "Linux":
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclass
class RankWork:
    """What any rank can be asked to do; the same code on rank 0 and on the followers."""

    train_step: Callable
    checkpoints: LearnerCheckpoints
    policy: Any
    tokenizer: Any  # None on followers: only rank 0 writes the tokenizer files
    dist: DistContext

    def step(self, batch, step: int) -> dict[str, float]:
        return self.train_step(batch, step)

    def export(self) -> dict[str, torch.Tensor]:
        return build.rollout_weights(self.policy, self.dist)()

    def save(self, step: int, state: dict, tag: str | None) -> Path:
        return self.checkpoints.save(step, state, tag)

    def restore(self, source: str) -> dict:
        saved = self.checkpoints.restore(source)
        restore_controller(self.train_step, saved)  # every rank's KL coefficient, not only rank 0's
        return saved

    def final(self, out_dir: Path) -> Path:
        return build.save_pretrained(self.policy, self.tokenizer, self.dist, out_dir)


@dataclass
class TrainerParts:
    """What the loop trains with (parts.py's protocols), on one process or as rank 0 of N."""

    train_step: Callable
    export_weights: Callable[[], dict]
    checkpoints: Any  # LearnerCheckpoints, or LeaderCheckpoints under torchrun
    save_final: Callable[[Path], Path]
    close: Callable[[], None]


def rank_work(cfg, policy, critic, tokenizer, ctx: DistContext) -> RankWork:
    return RankWork(
        build.build_train_step(cfg, policy, critic, ctx),
        LearnerCheckpoints(cfg, policy, critic),
        policy,
        tokenizer,
        ctx,
    )


def trainer_parts(cfg, policy, critic, tokenizer, ctx: DistContext) -> TrainerParts:
    """The plain parts on one process; under torchrun the same parts behind rank 0's commands."""
    work = rank_work(cfg, policy, critic, tokenizer, ctx)
    if not ctx.distributed:
        export = build.rollout_weights(policy, ctx, adapter_only=pushes_adapter(cfg))
        return TrainerParts(work.train_step, export, work.checkpoints, work.final, close=lambda: None)
    leader = Leader(work, _COMMANDS["group"])
    return TrainerParts(LeaderStep(leader), leader.export, LeaderCheckpoints(leader), leader.final, leader.stop)


def rank_shares(batch, ranks: int) -> list:
    """`ranks` consecutive slices of whole groups with equal row counts (groups_to_batch keeps
    a group's rows together); a clear error when the batch cannot be split so."""
    ids, sizes = torch.unique_consecutive(batch.group_ids, return_counts=True)
    rows, share = batch.batch_size, batch.batch_size // ranks
    ends = set(torch.cumsum(sizes, 0).tolist())
    if rows % ranks or len(ids) != len(set(ids.tolist())) or any(share * r not in ends for r in range(1, ranks)):
        raise ValueError(
            f"cannot split a batch of {rows} rows in groups of {sizes.tolist()} rows into "
            f"{ranks} ranks of whole groups with equal rows: set learner.prompts_per_step to "
            f"a multiple of learner.ranks, with groups of one size (rollout.sampling.group_size)"
        )
    return [batch.select(slice(r * share, (r + 1) * share)) for r in range(ranks)]


class Leader:
    """Rank 0: send a command to every rank, then do rank 0's part of it."""

    def __init__(self, work: RankWork, group):
        self.work, self.group = work, group
        self.failed = self.stopped = False

    def run(self, command, local: Callable, *args):
        """`command` (one tuple for all ranks, or a list: one per rank), then `local(*args)`."""
        commands = command if isinstance(command, list) else [command] * self.work.dist.world_size
        try:
            dist.scatter_object_list([None], commands, src=0, group=self.group)
            return local(*args)
        except BaseException:
            self.failed = True  # the followers may sit in a collective: no "stop" can reach them
            raise

    def step(self, batch, step: int) -> dict[str, float]:
        shares = rank_shares(batch, self.work.dist.world_size)
        return self.run([("step", share, step) for share in shares], self.work.step, shares[0], step)

    def export(self) -> dict[str, torch.Tensor]:
        return self.run(("export",), self.work.export)

    def final(self, out_dir: Path) -> Path:
        return self.run(("final", out_dir), self.work.final, out_dir)

    def stop(self, wait_s: float = 60.0) -> None:
        """Release the followers (once; not after a failed command: rank 0's exit ends them)."""
        if self.stopped or self.failed:
            return
        self.stopped = True
        sender = threading.Thread(target=self.run, args=(("stop",), lambda: None), daemon=True)
        sender.start()
        sender.join(wait_s)  # bounded: a follower that died must not keep rank 0 from exiting
        if not sender.is_alive() and not self.failed:
            dist.destroy_process_group()


class LeaderStep:
    """The loop's TrainStep on rank 0: each rank gets its share of the batch."""

    def __init__(self, leader: Leader):
        self.leader = leader

    @property
    def kl_ctrl(self):  # the loop's snapshot / restore read the adaptive KL coefficient here
        return getattr(self.leader.work.train_step, "kl_ctrl", None)

    @property
    def entropy_ctrl(self):  # ... and the adaptive entropy coefficient
        return getattr(self.leader.work.train_step, "entropy_ctrl", None)

    def __call__(self, batch, step: int) -> dict[str, float]:
        return self.leader.step(batch, step)


class LeaderCheckpoints:
    """The loop's CheckpointStore on rank 0: saves and restores are collective."""

    def __init__(self, leader: Leader):
        self.leader, self.local = leader, leader.work.checkpoints

    def save(self, step: int, state: dict, tag: str | None = None) -> Path:
        return self.leader.run(("save", step, tag), self.leader.work.save, step, state, tag)

    def restore(self, source) -> dict:
        return self.leader.run(("restore", str(source)), self.leader.work.restore, str(source))

    def restore_if_any(self, source):
        return LearnerCheckpoints.restore_if_any(self, source)  # its checks, then our collective restore

    def path_of(self, step: int) -> Path:
        return self.local.path_of(step)

    def tag(self, step: int, name: str) -> Path:
        return self.local.tag(step, name)


def follow(work: RankWork) -> None:
    """Ranks > 0: do what rank 0 sends until it says stop."""
    for sig in (signal.SIGTERM, signal.SIGINT):  # rank 0 leads the stop (step, checkpoint, "stop")
        signal.signal(sig, signal.SIG_IGN)
    handlers = {
        "step": work.step,
        "export": work.export,
        "restore": work.restore,
        "final": work.final,
        "save": lambda step, tag: work.save(step, {}, tag),
    }  # rank 0 writes the loop's state
    while True:
        box = [None]
        dist.scatter_object_list(box, None, src=0, group=_COMMANDS["group"])
        name, *args = box[0]
        if name == "stop":
            return
        handlers[name](*args)


def follower_main(args) -> int:
    """A rank > 0: the model's shard, then rank 0's commands; exit 0 on "stop"."""
    keep_new_files_private()  # checkpoint shards: owner only, as rank 0's files
    try:
        cfg = load_config(args.config)
        ctx = join(cfg.learner.ranks)
        policy, critic = build.build_policy_model(cfg, ctx)
        follow(rank_work(cfg, policy, critic, None, ctx))
    except startup_errors() as err:
        log.error("learner rank %s: %s", os.environ.get("RANK"), err)
        return 2
    dist.destroy_process_group()
    return 0
