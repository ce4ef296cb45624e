"""`manifest.json`: what a checkpoint holds, with sha256 and size of every file.

The manifest also hashes itself (`manifest_sha256` over its other fields, canonical JSON),
so a hand-edited or truncated manifest is told apart from a corrupted data file. That hash
has no key: anyone who alters a file can recompute it. So the learner also signs it
(`signature`: Ed25519 over `manifest_sha256`, with the run's key, meshrl.security.run_key),
and a run dir that has a key (RUN_DIR/keys/run-signing.pub) accepts only checkpoints it
signed. `tags.json` is deliberately outside the manifest: tags change after the save.

Simplifications: files are hashed after they are written (a second read of the bytes);
hashing runs on a thread pool (hashlib releases the GIL), one file per task.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.layout import MANIFEST, UNHASHED, step_of
from meshrl.security.run_key import signer_from_env, verifier_for_run
from meshrl import __version__

FORMAT = "meshrl-checkpoint/1"
CHUNK = 8 << 20


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def data_files(ckpt: Path) -> list[str]:
    """Every file under `ckpt` except the manifest and tags, as sorted POSIX relative paths."""
    names = (p.relative_to(ckpt).as_posix() for p in ckpt.rglob("*") if p.is_file())
    return sorted(n for n in names if not n.startswith(UNHASHED))


def hash_files(ckpt: Path, names: list[str]) -> dict[str, dict]:
    """{relpath: {"sha256", "size"}} for `names`, hashed in parallel."""
    workers = min(8, max(1, os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        digests = list(pool.map(lambda n: sha256_file(ckpt / n), names))
    return {n: {"sha256": d, "size": (ckpt / n).stat().st_size} for n, d in zip(names, digests)}


def hash_config(config: dict) -> str:
    """sha256 hex of a resolved config dict as sorted-key JSON, for `config_hash=`: equal
    dicts give equal hashes."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def _self_hash(body: dict) -> str:
    fields = {k: v for k, v in body.items() if k not in ("manifest_sha256", "signature")}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def write_manifest(ckpt: Path, *, step: int, config_hash: str, extra: dict, signer=None) -> dict:
    """Hash every data file of `ckpt` and write `manifest.json` (fsynced), signed with
    `signer` (default: the run key the environment gives the learner, if any); return it."""
    body = {
        "format": FORMAT,
        "step": int(step),
        "config_hash": config_hash,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "created_unix": time.time(),
        "meshrl_version": __version__,
        **extra,
        "files": hash_files(ckpt, data_files(ckpt)),
    }
    body["manifest_sha256"] = _self_hash(body)
    signer = signer or signer_from_env()
    if signer is not None:
        body["signature"] = signer.sign(body["manifest_sha256"].encode()).hex()
    write_text_durable(ckpt / MANIFEST, json.dumps(body, indent=2, sort_keys=True) + "\n")
    return body


def write_text_durable(path: Path, text: str) -> None:
    """Write and fsync, so a crash right after never leaves a half-written small file."""
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def read_manifest(ckpt: str | Path) -> dict:
    """The parsed manifest; CheckpointError when missing, unparsable or edited after writing."""
    ckpt = Path(ckpt)
    path = ckpt / MANIFEST
    if not path.is_file():
        raise CheckpointError(
            f"{ckpt}: missing {MANIFEST} (the save did not finish, or the file was removed); use an earlier checkpoint"
        )
    try:
        body = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{path}: tampered manifest, not valid JSON ({err})") from err
    if not isinstance(body, dict) or body.get("manifest_sha256") != _self_hash(body):
        raise CheckpointError(
            f"{path}: tampered manifest, its self-checksum (manifest_sha256) "
            f"does not match its content; it was edited after the save. "
            f"Restore it or use an earlier checkpoint"
        )
    _check_signature(ckpt, body)
    return body


def _check_signature(ckpt: Path, body: dict) -> None:
    """With a run key for the checkpoint's run dir: the learner must have signed this manifest."""
    verifier = verifier_for_run(ckpt.parent.parent)
    if verifier is None:
        return
    try:
        signature = bytes.fromhex(body.get("signature") or "")
    except ValueError:
        signature = b""
    if not verifier.valid(str(body["manifest_sha256"]).encode(), signature):
        state = "is not signed" if not body.get("signature") else "has a signature the run's key does not verify"
        raise CheckpointError(
            f"{ckpt / MANIFEST}: tampered or foreign checkpoint: its manifest {state} "
            f"({verifier.source}); only the run's learner signs its checkpoints. Use "
            f"another checkpoint"
        )


def file_problems(ckpt: Path, manifest: dict, *, full: bool = True) -> list[str]:
    """What disagrees with the manifest: missing, resized, changed (sha256) or unlisted files.

    `full=False` checks presence and sizes only (no hashing): a quick look for listings.
    """
    listed = manifest.get("files", {})
    problems = []
    for name, meta in sorted(listed.items()):
        path = ckpt / name
        if not path.is_file():
            problems.append(f"missing file {name}")
        elif path.stat().st_size != meta["size"]:
            problems.append(f"size mismatch in {name}: {path.stat().st_size} bytes, manifest says {meta['size']}")
        elif full and sha256_file(path) != meta["sha256"]:
            problems.append(f"checksum mismatch in {name}")
    problems += [f"unexpected file {n} not in the manifest" for n in data_files(ckpt) if n not in listed]
    return problems


def verify_checkpoint(ckpt: str | Path, *, full: bool = True) -> dict:
    """The manifest of a checkpoint whose files all match it; CheckpointError naming each problem."""
    ckpt = Path(ckpt)
    manifest = read_manifest(ckpt)
    problems = file_problems(ckpt, manifest, full=full)
    named = step_of(ckpt)
    if named is not None and named != manifest.get("step"):
        problems.insert(0, f"folder says step {named}, manifest says step {manifest.get('step')}")
    if problems:
        raise CheckpointError(f"{ckpt}: corrupt checkpoint: {'; '.join(problems)}")
    return manifest
