"""The run's signing key: weights notices and checkpoint manifests are signed by the learner
(Ed25519), and every reader checks the signature with the public half.

    keys = ensure_run_keys(run_dir)                 # the launcher, once per run dir
    env = run_key_env(run_dir, "rollout")           # what the launcher gives each kind
    signer = signer_from_env()                      # the learner: MESHRL_RUN_SIGNING_KEY_FILE
    verifier = verifier_from_env()                  # every service: MESHRL_RUN_VERIFY_KEY_FILE
    verifier = verifier_for_run(run_dir)            # a run dir's checkpoints: RUN_DIR/keys/run-signing.pub

Why a signature and not a keyed hash: the readers (rollout replicas, eval, export, the
gateway) can check it without being able to make one, so a compromised reader cannot
forge a notice or re-sign a checkpoint it altered. The private key is given to the
learner only (an environment variable naming a 0600 file; in a cluster, a Secret mounted
in the learner's pods alone). It lives in RUN_DIR/keys/ and is kept across restarts:
checkpoints signed before a restart must still verify after it.

Where no verify key is configured (a run dir made before keys existed, a bare test), an
unsigned notice or manifest is accepted as before; where one is, unsigned is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from meshrl.run.layout import KEYS, RunDir

SIGNING_KEY_ENV = "MESHRL_RUN_SIGNING_KEY_FILE"
VERIFY_KEY_ENV = "MESHRL_RUN_VERIFY_KEY_FILE"
PRIVATE_NAME, PUBLIC_NAME = "run-signing.key", "run-signing.pub"


class RunKeyError(Exception):
    """A key file is missing or unreadable."""


@dataclass(frozen=True)
class RunKeys:
    private: Path
    public: Path

    def learner_env(self) -> dict[str, str]:
        return {SIGNING_KEY_ENV: str(self.private), VERIFY_KEY_ENV: str(self.public)}

    def reader_env(self) -> dict[str, str]:
        """What every other service gets: the public key only (and never the learner's variable)."""
        return {VERIFY_KEY_ENV: str(self.public), SIGNING_KEY_ENV: ""}


def run_keys(run_dir: str | Path) -> RunKeys:
    folder = RunDir(run_dir).keys
    return RunKeys(folder / PRIVATE_NAME, folder / PUBLIC_NAME)


def create_run_keys(run_dir: str | Path) -> RunKeys:
    """RUN_DIR/keys/run-signing.{key,pub}, made once (0600 key in a 0700 folder) and kept."""
    keys = run_keys(run_dir)
    if keys.private.is_file() and keys.public.is_file():
        return keys
    keys.private.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(keys.private.parent, 0o700)
    private = Ed25519PrivateKey.generate()
    _write_new(
        keys.private,
        private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        0o600,
    )
    _write_new(
        keys.public,
        private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
        0o644,
    )
    return keys


def ensure_run_keys(run_dir: str | Path) -> RunKeys | None:
    """The launcher's: the run dir's keys, made for a run dir without checkpoints yet. A run
    dir with checkpoints but no keys (made before signing existed) stays unsigned, or its
    own checkpoints would be refused on resume."""
    keys = run_keys(run_dir)
    if keys.public.is_file() or not any(RunDir(run_dir).checkpoints.glob("step_*")):
        return create_run_keys(run_dir)
    return None


def run_key_env(run_dir: str | Path, kind: str) -> dict[str, str]:
    """A service's environment for the run's keys: the learner signs, every other kind verifies."""
    keys = run_keys(run_dir)
    if not keys.public.is_file():
        return {}
    return keys.learner_env() if kind == "learner" else keys.reader_env()


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


def verifier_from_env(env=os.environ) -> RunVerifier | None:
    path = env.get(VERIFY_KEY_ENV)
    return load_verifier(path) if path else None


def verifier_for_run(run_dir: str | Path, env=os.environ) -> RunVerifier | None:
    """The key a run dir's checkpoints are checked with: RUN_DIR/keys/run-signing.pub, else
    the environment's verify key, else None (a run dir made before keys existed)."""
    public = run_keys(run_dir).public
    return load_verifier(public, "run key") if public.is_file() else verifier_from_env(env)
