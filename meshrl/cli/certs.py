"""`meshrl certs issue`: TLS files for an environment or reward service meshrl does not launch.

    meshrl certs issue --kind environment --name guess --host env.example.com --out certs/
    meshrl certs issue --kind reward --name judge --host 10.0.0.7 \\
        --ca-cert ops-ca.pem --ca-key ops-ca.key --out certs/

writes into OUT (keys 0600):

    ca.pem                    the CA both sides trust
    ca.key                    only when no --ca-cert was named: a new CA's key, to issue again later
    NAME-server.pem / .key    the external service's certificate (its SANs: every --host)
    NAME-client.pem / .key    meshrl's client certificate, which the service asks for (mutual TLS)

and prints the lines to use them: the service's MESHRL_GRPC_TLS_* environment (the SDKs and
the TypeScript examples read them) and the run config's `environment.tls` or the reward component's `tls`.
The run's own gRPC CA (launch.grpc_tls) is made anew at every launcher start and its key is
never written, so it cannot sign a service that lives longer: an external service gets a CA
of its own (or the operator's). Simplification: no revocation; reissue before `--days` end.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from meshrl.cli import about
from meshrl.errors import LaunchError
from meshrl.private_files import make_private_dir
from meshrl.transport.certs import CertificateAuthority, NotACa, load_ca, new_ca

CONFIG_KEY = {"environment": "environment.tls", "reward": "reward.components[NAME].tls"}


def add_parser(sub) -> None:
    p = sub.add_parser(
        "certs", help=about("certs"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    issue = actions.add_parser(
        "issue", help="server + client certificates for an external environment or reward service"
    )
    issue.add_argument("--kind", required=True, choices=sorted(CONFIG_KEY), help="what the service is")
    issue.add_argument("--name", required=True, help="the service's name: the files' stem and the certificates' CN")
    issue.add_argument("--host", action="append", required=True, help="a DNS name or IP meshrl dials (repeatable)")
    issue.add_argument("--ca-cert", type=Path, help="the operator's CA certificate (PEM); default: a new CA in OUT")
    issue.add_argument("--ca-key", type=Path, help="that CA's unencrypted PEM key")
    issue.add_argument("--days", type=int, default=90, help="how long the certificates live (default 90)")
    issue.add_argument("--out", type=Path, required=True, help="the folder to write into (made 0700)")
    issue.set_defaults(func=run_issue)


def certificate_authority(args) -> CertificateAuthority:
    """The operator's CA when named, else a new one whose key is kept in OUT."""
    if (args.ca_cert is None) != (args.ca_key is None):
        raise LaunchError("--ca-cert and --ca-key go together: name both (the CA and its key), or neither for a new CA")
    if args.days < 1:
        raise LaunchError(f"--days {args.days}: certificates must live at least one day")
    if args.ca_cert is None:
        ca = new_ca(f"meshrl external {args.kind} CA", days=args.days)
        ca.write_key(args.out / "ca.key")
        return ca
    try:
        return load_ca(args.ca_cert, args.ca_key, days=args.days)
    except NotACa as err:
        raise LaunchError(str(err)) from None


def run_issue(args) -> int:
    if not args.name.replace("-", "").replace("_", "").isalnum():
        raise LaunchError(f"--name {args.name!r}: use letters, digits, - and _ only (it names the files)")
    make_private_dir(args.out)
    ca = certificate_authority(args)
    ca_file = ca.write(args.out / "ca.pem")
    server = ca.issue(args.name, hosts=args.host, server=True).write(args.out / f"{args.name}-server")
    client = ca.issue(f"meshrl-{args.kind}-client", server=False, client=True).write(args.out / f"{args.name}-client")
    print(usage(args, ca.days, ca_file, server, client))
    return 0


def usage(args, days: int, ca_file: Path, server: tuple[Path, Path], client: tuple[Path, Path]) -> str:
    """What goes where: the service's environment, then the run config's TLS block."""
    key = CONFIG_KEY[args.kind].replace("NAME", args.name)
    return "\n".join(
        [
            f"the {args.kind} service {args.name} (serves TLS and asks for meshrl's client certificate):",
            f"  MESHRL_GRPC_TLS_CA_FILE={ca_file.resolve()}",
            f"  MESHRL_GRPC_TLS_CERT_FILE={server[0].resolve()}",
            f"  MESHRL_GRPC_TLS_KEY_FILE={server[1].resolve()}",
            "  MESHRL_GRPC_TLS_CLIENT_AUTH=1",
            f"the run config ({key}), read by the meshrl replicas that call it:",
            f"  tls: {{ca_file: {ca_file.resolve()}, cert_file: {client[0].resolve()}, key_file: {client[1].resolve()}}}",
            f"valid {days} days, for {', '.join(args.host)}",
        ]
    )
