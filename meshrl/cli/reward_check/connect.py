"""The kits' channel (reward and environment checks): plaintext, TLS or mutual TLS, and a
bearer token as call metadata."""

from __future__ import annotations

from grpc import aio

from meshrl.cli.reward_check.tls_probe import TlsProbe
from meshrl.config.secrets import read_secret
from meshrl.transport.rpc.channel import message_options
from meshrl.transport.rpc.mesh_tls import channel_credentials

FLAGS = {"ca_file": "--tls-ca", "cert_file": "--tls-cert", "key_file": "--tls-key"}


def open_check_channel(
    address: str,
    *,
    tls_ca: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    server_name: str | None = None,
    who: str = "meshrl reward check",
) -> aio.Channel:
    """TLS when any --tls-* flag is given (mutual TLS with --tls-cert and --tls-key)."""
    options = list(message_options())
    if server_name:
        options.append(("grpc.ssl_target_name_override", server_name))
    if tls_ca is None and tls_cert is None and tls_key is None:
        return aio.insecure_channel(address, options=options)
    creds = channel_credentials(tls_ca, tls_cert, tls_key, who=who, labels=FLAGS)
    return aio.secure_channel(address, creds, options=options)


def token_metadata(token_file: str | None) -> tuple[tuple[str, str], ...]:
    """("authorization", "Bearer <token>") from the file; the token is never printed."""
    token = read_secret(env_name=None, file=token_file, file_label="--token-file")
    return () if token is None else (("authorization", f"Bearer {token}"),)


def connect_from_args(args, who: str) -> tuple[aio.Channel, tuple[tuple[str, str], ...]]:
    """(channel, token metadata) from the flags of add_connection_flags."""
    metadata = token_metadata(args.token_file)
    return open_check_channel(
        args.address,
        tls_ca=args.tls_ca,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        server_name=args.server_name,
        who=who,
    ), metadata


def probe_from_args(args) -> TlsProbe:
    """The TLS probe that explains a failed connection with the same flags as the channel."""
    return TlsProbe(args.address, args.tls_ca, args.tls_cert, args.tls_key, args.server_name)
