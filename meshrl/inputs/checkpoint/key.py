"""The key checkpoint manifests are signed with: one per user, outside every run dir.

    signer = signer_for_save()      # the learner: the key file, made (0600) on the first save
    check_signing_key()             # the learner at start-up: that save will be able to sign
    verifier = trusted_verifier()   # every reader: the same file, or None when there is none

Where: `$MESHRL_CHECKPOINT_KEY_FILE`, else `$XDG_CONFIG_HOME/meshrl/checkpoint-signing.key`,
else `~/.config/meshrl/checkpoint-signing.key`. The file holds an Ed25519 key as PEM: a
private key signs and verifies; a public key (what a cluster mounts into a reader such as the
gateway, from a Secret) only verifies.

Why not the run dir's own keys: whoever can write a checkpoint folder can usually write its
run dir too, and a key read from beside what it signs proves nothing: an attacker who
replaces the run's key and re-signs, or removes it, would be trusted. This key lives where
only the user (or the pod's Secret) can write.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.security.run_key import RunSigner, RunVerifier

KEY_ENV = "MESHRL_CHECKPOINT_KEY_FILE"
KEY_NAME = "checkpoint-signing.key"
PUBLIC_NAME = "checkpoint-verify.pub"  # the public half, for readers that only verify (a gateway)


def key_path(env=os.environ) -> Path:
    """The checkpoint key file this process uses (it may not exist yet)."""
    if env.get(KEY_ENV):
        return Path(env[KEY_ENV]).expanduser()
    config_home = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config_home) / "meshrl" / KEY_NAME


def _load(path: Path) -> Ed25519PrivateKey | Ed25519PublicKey:
    try:
        pem = path.read_bytes()
    except OSError as err:
        raise CheckpointError(f"{KEY_ENV}={path}: cannot read the checkpoint key ({err.strerror})") from None
    try:
        key = serialization.load_pem_private_key(pem, password=None) if b"PRIVATE" in pem else None
        key = key or serialization.load_pem_public_key(pem)
    except ValueError:
        key = None
    if not isinstance(key, (Ed25519PrivateKey, Ed25519PublicKey)):
        raise CheckpointError(
            f"{KEY_ENV}={path} is not an Ed25519 key in PEM; remove it to have the next save make one"
        )
    return key


def trusted_verifier(env=os.environ) -> RunVerifier | None:
    """The verifier of this user's checkpoint key; None when no key file exists yet."""
    path = key_path(env)
    if not path.is_file():
        return None
    key = _load(path)
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return RunVerifier(public, f"checkpoint key {path}")


def signer_for_save(env=os.environ) -> RunSigner:
    """The signer of this user's checkpoint key, making the key (0600 in a 0700 folder) when
    there is none; a public-only key file cannot sign and says so."""
    path = key_path(env)
    if not path.is_file():
        _create(path)
    key = _load(path)
    if not isinstance(key, Ed25519PrivateKey):
        raise CheckpointError(
            f"{KEY_ENV}={path} holds a public key, which only verifies; the learner needs the private key file"
        )
    return RunSigner(key)


def check_signing_key(env=os.environ) -> Path:
    """At a learner's start, before any training: the key file `signer_for_save` will use is
    a private key this process can read, or, when there is none yet, can be made. Otherwise a
    CheckpointError naming the file and the fix, rather than a failed save after the run."""
    path = key_path(env)
    uid = os.geteuid()
    if not os.path.lexists(path):
        parent = next((p for p in path.parents if p.exists()), Path("/"))
        if not os.access(parent, os.W_OK | os.X_OK):
            raise CheckpointError(
                f"{KEY_ENV}={path}: no checkpoint key there and uid {uid} cannot make one in {parent}; "
                f"make it with `meshrl checkpoints key --out DIR`, readable by uid {uid}, and point {KEY_ENV} at it"
            )
        return path
    try:
        path.read_bytes()
    except OSError as err:
        raise CheckpointError(
            f"{KEY_ENV}={path}: cannot read the checkpoint key as uid {uid} ({err.strerror}); make it readable "
            f"by that user, still private (`chown {uid} {path}`, mode 0600; compose: run "
            "deploy/compose/make_nats_auth.py again as root)"
        ) from None
    if not isinstance(_load(path), Ed25519PrivateKey):
        raise CheckpointError(
            f"{KEY_ENV}={path} holds a public key, which only verifies; the learner needs the private key file"
        )
    return path


def key_pair(private: Path) -> tuple[Path, Path]:
    """The signing key at `private` (made when absent, never replaced: a new key would orphan
    every checkpoint the old one signed) and its public half written beside it (PUBLIC_NAME),
    for a container or pod to mount from a Secret (docs/guide/cluster.md)."""
    if not private.is_file():
        _create(private)
    key = _load(private)
    if not isinstance(key, Ed25519PrivateKey):
        raise CheckpointError(f"{private} holds a public key; name the private key file")
    public = private.with_name(PUBLIC_NAME)
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


def _create(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    try:
        os.link(tmp, path)  # whole or not at all; never replaces a key another process made first
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
