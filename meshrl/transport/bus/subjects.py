"""Names of every NATS subject, stream and bucket a run uses.

A run id becomes one subject token and part of stream/bucket names: characters outside
`[A-Za-z0-9_-]` (dots, spaces, wildcards) are replaced by `_`, so `exp.1` and `exp_1`
share a namespace; pick run ids that differ in letters or digits. Case is kept.

    meshrl.<run>.prompts | generated | scored | ready   work queues (one stream each)
    meshrl.<run>.dead                                   dead letters
    meshrl.<run>.events, meshrl.<run>.weights.loaded    events (one stream)
"""

import re

STAGES = ("prompts", "generated", "scored", "ready")
# Run-state KV key holding the latest common.v1.WeightsNotice (learner puts, replicas watch).
WEIGHTS_NOTICE_KEY = "weights_notice"
# Run-state KV key holding the run's current weights version, {"version": V, "step": S}: the
# learner puts it BEFORE each notice; a replica loads only the notice of that version.
RUN_VERSION_KEY = "run_version"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def run_token(run_id: str) -> str:
    """The run id as one safe NATS token / stream-name fragment."""
    if not run_id:
        raise ValueError("run id is empty: pass the run's name (e.g. cfg.run.name)")
    return _UNSAFE.sub("_", run_id)


def check_stage(stage: str) -> str:
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}: allowed stages are {', '.join(STAGES)}")
    return stage


def stage_subject(run_id: str, stage: str) -> str:
    return f"meshrl.{run_token(run_id)}.{check_stage(stage)}"


def stage_stream(run_id: str, stage: str) -> str:
    return f"MESHRL_{run_token(run_id)}_{check_stage(stage).upper()}"


def dead_subject(run_id: str) -> str:
    return f"meshrl.{run_token(run_id)}.dead"


def dead_stream(run_id: str) -> str:
    return f"MESHRL_{run_token(run_id)}_DEAD"


def events_subject(run_id: str) -> str:
    return f"meshrl.{run_token(run_id)}.events"


def weights_loaded_subject(run_id: str) -> str:
    return f"meshrl.{run_token(run_id)}.weights.loaded"


def events_stream(run_id: str) -> str:
    return f"MESHRL_{run_token(run_id)}_EVENTS"


def kv_bucket(run_id: str) -> str:
    return f"meshrl_{run_token(run_id)}_state"


def object_bucket(run_id: str) -> str:
    return f"meshrl_{run_token(run_id)}_weights"


def shm_prefix(run_id: str) -> str:
    """Every file or dir a run keeps in /dev/shm starts with this (weights, staging, fetches),
    so whoever outlives the run's processes can free that memory."""
    return f"meshrl-{run_id}"


def weights_object_name(version: int) -> str:
    """Object-store name of one weights version; zero-padded so names sort by version."""
    return f"weights-v{version:010d}.safetensors"
