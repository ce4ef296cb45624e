"""The run's signing key: weights notices are signed by the learner (Ed25519), and every reader
checks the signature with the public half. (Checkpoint manifests are signed with another key,
the user's, which no run dir holds: meshrl.inputs.checkpoint.key.)

    keys = ensure_run_keys(run_dir)                 # the launcher, once per run dir
    env = run_key_env(run_dir, "rollout")           # what the launcher gives each kind
    token = weights_token_from_env()                # learner and rollout: the collective's shared token
    signer = signer_from_env()                      # the learner: MESHRL_RUN_SIGNING_KEY_FILE
    verifier = verifier_from_env()                  # every service: MESHRL_RUN_VERIFY_KEY_FILE

Why a signature and not a keyed hash: the readers (rollout replicas) can check it without
being able to make one, so a compromised reader cannot forge a notice. The private key is given to the learner only (an environment variable
naming a 0600 file; in a cluster, a Secret mounted in the learner's pods alone). It lives in
RUN_DIR/keys/ and is kept across restarts.

Where no verify key is configured (a bare test), an unsigned notice is accepted; where one
is, unsigned is refused.

RUN_DIR/keys/weights.token is a shared secret of the learner and the rollout replicas only:
with `weights_transport: collective` a replica proves it holds it before the learner's
weights server hands it the model (meshrl.transport.weights.collective).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from meshrl.run_layout import KEYS, RunDir

WEIGHTS_TOKEN_ENV = "MESHRL_WEIGHTS_TOKEN_FILE"
SIGNING_KEY_ENV = "MESHRL_RUN_SIGNING_KEY_FILE"
VERIFY_KEY_ENV = "MESHRL_RUN_VERIFY_KEY_FILE"
PRIVATE_NAME, PUBLIC_NAME, WEIGHTS_TOKEN_NAME = "run-signing.key", "run-signing.pub", "weights.token"


class RunKeyError(Exception):
    """A key file is missing or unreadable."""


@dataclass(frozen=True)
class RunKeys:
    private: Path
    public: Path
    weights_token: Path  # shared by the learner and the rollout replicas: the collective's (collective.py)

    def env_for(self, kind: str) -> dict[str, str]:
        """A service kind's variables: the signing key to the learner alone, the weights token to
        the learner and rollout, the public key to all (the others' variables set empty)."""
        return {
            VERIFY_KEY_ENV: str(self.public),
            SIGNING_KEY_ENV: str(self.private) if kind == "learner" else "",
            WEIGHTS_TOKEN_ENV: str(self.weights_token) if kind in ("learner", "rollout") else "",
        }


def run_keys(run_dir: str | Path) -> RunKeys:
    folder = RunDir(run_dir).keys
    return RunKeys(folder / PRIVATE_NAME, folder / PUBLIC_NAME, folder / WEIGHTS_TOKEN_NAME)


def create_run_keys(run_dir: str | Path) -> RunKeys:
    """RUN_DIR/keys: the signing key pair and the weights token, each made once (0600 in a
    0700 folder) and kept."""
    keys = run_keys(run_dir)
    keys.private.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(keys.private.parent, 0o700)
    if not keys.weights_token.is_file():  # also for a keys folder made before the token existed
        _write_new(keys.weights_token, secrets.token_hex(32).encode(), 0o600)
    if not (keys.private.is_file() and keys.public.is_file()):
        _write_key_pair(keys)
    return keys


def _write_key_pair(keys: RunKeys) -> None:
    private = Ed25519PrivateKey.generate()
    pem = serialization.Encoding.PEM
    _write_new(
        keys.private, private.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()), 0o600
    )
    _write_new(
        keys.public, private.public_key().public_bytes(pem, serialization.PublicFormat.SubjectPublicKeyInfo), 0o644
    )


def ensure_run_keys(run_dir: str | Path) -> RunKeys:
    """The launcher's: the run dir's keys, made once. A run dir made before keys existed gets
    them too: checkpoints no longer depend on them (meshrl.inputs.checkpoint.key)."""
    return create_run_keys(run_dir)


def run_key_env(run_dir: str | Path, kind: str) -> dict[str, str]:
    """A service's environment for the run's keys: the learner signs, every other kind verifies."""
    keys = run_keys(run_dir)
    return keys.env_for(kind) if keys.public.is_file() else {}


def _write_new(path: Path, data: bytes, mode: int) -> None:
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


class RunSigner:
    def __init__(self, key: Ed25519PrivateKey):
        self._key = key

    def sign(self, payload: bytes) -> bytes:
        return self._key.sign(payload)

    def __repr__(self) -> str:
        return "RunSigner(<private key>)"


class RunVerifier:
    def __init__(self, key: Ed25519PublicKey, source: str):
        self._key, self.source = key, source

    def valid(self, payload: bytes, signature: bytes) -> bool:
        try:
            self._key.verify(signature, payload)
        except (InvalidSignature, ValueError):
            return False
        return True


def _read(path: str, env: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise RunKeyError(
            f"{env}={path}: cannot read the run's key ({err.strerror}); the launcher makes it in RUN_DIR/{KEYS}/"
        ) from None


def signer_from_env(env=os.environ) -> RunSigner | None:
    path = env.get(SIGNING_KEY_ENV)
    if not path:
        return None
    key = serialization.load_pem_private_key(_read(path, SIGNING_KEY_ENV), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise RunKeyError(f"{SIGNING_KEY_ENV}={path} is not an Ed25519 private key")
    return RunSigner(key)


def load_verifier(path: str | Path, what: str = VERIFY_KEY_ENV) -> RunVerifier:
    key = serialization.load_pem_public_key(_read(str(path), what))
    if not isinstance(key, Ed25519PublicKey):
        raise RunKeyError(f"{what}={path} is not an Ed25519 public key")
    return RunVerifier(key, str(path))


def weights_token_from_env(env=os.environ) -> bytes | None:
    """The collective weights transport's shared token (learner and rollout), or None."""
    path = env.get(WEIGHTS_TOKEN_ENV)
    return _read(path, WEIGHTS_TOKEN_ENV).strip() if path else None


def verifier_from_env(env=os.environ) -> RunVerifier | None:
    path = env.get(VERIFY_KEY_ENV)
    return load_verifier(path) if path else None
