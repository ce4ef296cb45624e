"""`manifest.json`: what a checkpoint holds, with sha256 and size of every file.

The manifest also hashes itself (`manifest_sha256` over its other fields, canonical JSON),
so a hand-edited or truncated manifest is told apart from a corrupted data file. That hash
has no key: anyone who alters a file can recompute it. So the learner also signs it
(`signature`: Ed25519 over `manifest_sha256`, with the user's checkpoint key, key.py: never
a key from the checkpoint's own folder or run dir), and every reader checks that signature
first, before any other file is read: an unsigned checkpoint, or one signed by another key,
is refused with the command that signs it once the operator vouches for it (convert.py).
A checkpoint of an older meshrl is refused before that, by its file names (legacy.py).
`tags.json` is deliberately outside the manifest: tags change after the save.

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

from meshrl import __version__
from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.key import KEY_ENV, key_path, trusted_verifier
from meshrl.inputs.checkpoint.layout import FORMAT, MANIFEST, UNHASHED, step_of
from meshrl.inputs.checkpoint.legacy import CONVERT_FLAG, convert_command, refuse_legacy
from meshrl.inputs.checkpoint.reading import json_text, parse_json

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


def write_manifest(ckpt: Path, *, step: int, config_hash: str, extra: dict, signer) -> dict:
    """Hash every data file of `ckpt` and write `manifest.json` (fsynced), signed with
    `signer` (the user's checkpoint key, key.signer_for_save); return it."""
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
    return write_signed(ckpt, body, signer)


def write_signed(ckpt: Path, body: dict, signer) -> dict:
    """`body` with its self-hash and `signer`'s signature, written as the manifest of `ckpt`."""
    body = {k: v for k, v in body.items() if k not in ("manifest_sha256", "signature")}
    body["manifest_sha256"] = _self_hash(body)
    body["signature"] = signer.sign(body["manifest_sha256"].encode()).hex()
    write_text_durable(ckpt / MANIFEST, json.dumps(body, indent=2, sort_keys=True) + "\n")
    return body


def write_text_durable(path: Path, text: str) -> None:
    """Write and fsync, so a crash right after never leaves a half-written small file."""
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def read_manifest(ckpt: str | Path, *, signed: bool = True) -> dict:
    """The parsed manifest; CheckpointError when the folder is an older meshrl's, or the
    manifest is missing, unparsable, edited after writing or (with `signed`, always but for
    the converter) not signed by the user's checkpoint key."""
    ckpt = Path(ckpt)
    refuse_legacy(ckpt)
    path = ckpt / MANIFEST
    if not path.is_file():
        raise CheckpointError(
            f"{ckpt}: missing {MANIFEST} (the save did not finish, or the file was removed); use an earlier checkpoint"
        )
    try:
        body = parse_json(json_text(path))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise CheckpointError(f"{path}: tampered manifest, not valid JSON ({str(err)[:200]})") from None
    if not isinstance(body, dict) or body.get("manifest_sha256") != _self_hash(body):
        raise CheckpointError(
            f"{path}: tampered manifest, its self-checksum (manifest_sha256) "
            f"does not match its content; it was edited after the save. "
            f"Restore it or use an earlier checkpoint"
        )
    refuse_legacy(ckpt, str(body.get("format")))
    if signed:
        _check_signature(ckpt, body)
    return body


def _check_signature(ckpt: Path, body: dict) -> None:
    """The user's checkpoint key must verify this manifest's signature (key.py)."""
    verifier = trusted_verifier()
    if verifier is None:
        raise CheckpointError(
            f"{ckpt}: no checkpoint key at {key_path()} to verify it with (the learner makes it on its "
            f"first save; set {KEY_ENV} to the key your learner signs with), so it is not loaded; if you "
            f"trust it, sign it: {convert_command(ckpt)}"
        )
    try:
        signature = bytes.fromhex(body.get("signature") or "")
    except ValueError:
        signature = b""
    if not verifier.valid(str(body["manifest_sha256"]).encode(), signature):
        state = "is not signed" if not body.get("signature") else "has a signature your key does not verify"
        raise CheckpointError(
            f"{ckpt / MANIFEST}: untrusted checkpoint: its manifest {state} ({verifier.source}); only "
            f"checkpoints your own learner signed load. If you trust it, sign it with {CONVERT_FLAG}: "
            f"{convert_command(ckpt)}"
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
