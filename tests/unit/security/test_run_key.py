"""The run's signing key: made once per run dir (0600 in a 0700 folder), kept across starts,
given to the learner alone; a run dir with checkpoints from before keys gets keys too.

Run: .venv/bin/python -m pytest tests/unit/security -q
"""

import stat

import pytest

from meshrl.security.run_key import (
    SIGNING_KEY_ENV,
    VERIFY_KEY_ENV,
    WEIGHTS_TOKEN_ENV,
    RunKeyError,
    create_run_keys,
    ensure_run_keys,
    load_verifier,
    run_key_env,
    signer_from_env,
    weights_token_from_env,
)


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_keys_are_private_kept_and_sign_what_the_public_half_verifies(tmp_path):
    keys = create_run_keys(tmp_path)
    assert (mode(keys.private), mode(keys.private.parent)) == (0o600, 0o700)
    assert create_run_keys(tmp_path).private.read_bytes() == keys.private.read_bytes()  # kept
    signer, verifier = signer_from_env({SIGNING_KEY_ENV: str(keys.private)}), load_verifier(keys.public)
    signature = signer.sign(b"notice v3")
    assert verifier.valid(b"notice v3", signature) and not verifier.valid(b"notice v4", signature)
    assert not verifier.valid(b"notice v3", b"\0" * 64) and "PRIVATE" not in repr(signer)


def test_only_the_learner_is_given_the_signing_key_and_the_rollout_the_weights_token(tmp_path):
    keys = ensure_run_keys(tmp_path)
    assert (mode(keys.weights_token), len(keys.weights_token.read_text())) == (0o600, 64)
    assert run_key_env(tmp_path, "learner") == {
        SIGNING_KEY_ENV: str(keys.private),
        VERIFY_KEY_ENV: str(keys.public),
        WEIGHTS_TOKEN_ENV: str(keys.weights_token),
    }
    assert weights_token_from_env(run_key_env(tmp_path, "rollout")) == keys.weights_token.read_bytes()
    for kind in ("rollout", "reward", "reference", "reward_model", "environment"):
        env = run_key_env(tmp_path, kind)
        assert env[VERIFY_KEY_ENV] == str(keys.public) and signer_from_env(env) is None
        assert bool(env[WEIGHTS_TOKEN_ENV]) == (kind == "rollout")


def test_a_run_dir_with_checkpoints_but_no_keys_gets_keys(tmp_path):
    """Checkpoints are signed with the user's key, not the run's: nothing keeps an old run dir unsigned."""
    (tmp_path / "checkpoints" / "step_2").mkdir(parents=True)
    keys = ensure_run_keys(tmp_path)
    assert keys.private.is_file() and run_key_env(tmp_path, "learner")[SIGNING_KEY_ENV] == str(keys.private)


def test_a_missing_key_file_is_named(tmp_path):
    with pytest.raises(RunKeyError, match=f"{SIGNING_KEY_ENV}=.*gone.*cannot read"):
        signer_from_env({SIGNING_KEY_ENV: str(tmp_path / "gone")})
