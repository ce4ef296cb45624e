"""The checkpoint signing key: where it is looked for, made 0600 once, and a public-only file verifies
but cannot sign."""

import stat

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from meshrl.inputs.checkpoint import CheckpointError
from meshrl.inputs.checkpoint.key import KEY_ENV, key_path, signer_for_save, trusted_verifier


def test_where_the_key_is_looked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert str(key_path({KEY_ENV: "/secrets/ckpt.key"})) == "/secrets/ckpt.key"
    assert key_path({"XDG_CONFIG_HOME": "/xdg"}) == key_path({"XDG_CONFIG_HOME": "/xdg", KEY_ENV: ""})
    assert str(key_path({"XDG_CONFIG_HOME": "/xdg"})) == "/xdg/meshrl/checkpoint-signing.key"
    assert key_path({}) == tmp_path / "home" / ".config" / "meshrl" / "checkpoint-signing.key"


def test_the_first_save_makes_it_0600_and_later_ones_reuse_it(tmp_path):
    env = {KEY_ENV: str(tmp_path / "cfg" / "meshrl" / "k.pem")}
    assert trusted_verifier(env) is None
    signer = signer_for_save(env)
    path = tmp_path / "cfg" / "meshrl" / "k.pem"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    first = path.read_bytes()
    assert trusted_verifier(env).valid(b"m", signer.sign(b"m"))
    signer_for_save(env)
    assert path.read_bytes() == first and [p.name for p in path.parent.iterdir()] == ["k.pem"]


def test_a_public_key_file_verifies_but_cannot_sign(tmp_path):
    private = Ed25519PrivateKey.generate()
    public = tmp_path / "pub.pem"
    public.write_bytes(
        private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    env = {KEY_ENV: str(public)}
    assert trusted_verifier(env).valid(b"m", private.sign(b"m"))
    assert not trusted_verifier(env).valid(b"m", Ed25519PrivateKey.generate().sign(b"m"))
    with pytest.raises(CheckpointError, match="holds a public key, which only verifies"):
        signer_for_save(env)


def test_a_file_that_is_no_key_is_one_clear_line(tmp_path):
    (tmp_path / "k").write_text("not a key\n")
    with pytest.raises(CheckpointError, match=r"k is not an Ed25519 key in PEM; remove it"):
        trusted_verifier({KEY_ENV: str(tmp_path / "k")})


def test_meshrl_checkpoints_key_makes_the_pair_once_and_the_public_half_verifies(tmp_path, capsys):
    """What compose and Kubernetes mount: the learner's private key (made once, never replaced)
    and its public half, which verifies what the private one signed and cannot sign."""
    from meshrl.cli.main import main

    assert main(["checkpoints", "key", "--out", str(tmp_path)]) == 0
    private, public = tmp_path / "checkpoint-signing.key", tmp_path / "checkpoint-verify.pub"
    first = private.read_bytes()
    assert main(["checkpoints", "key", "--out", str(tmp_path)]) == 0 and private.read_bytes() == first
    signed = signer_for_save({KEY_ENV: str(private)}).sign(b"manifest")
    assert trusted_verifier({KEY_ENV: str(public)}).valid(b"manifest", signed)
    with pytest.raises(CheckpointError, match="public key, which only verifies"):
        signer_for_save({KEY_ENV: str(public)})
    assert str(private) in capsys.readouterr().out
