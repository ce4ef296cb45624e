"""A submitted run is a tenant, not the gateway: what its config may reach, and the environment
its launcher starts with.

SubmitRun (admin) runs someone else's config on the gateway's machine as the gateway's
user. Schema checks alone let it read the gateway's files (`token_file: tokens.yaml`,
`data.train: /etc/...`), hand the gateway's own environment to a webhook
(`token_env: ANY_VARIABLE`), and reach any host (webhooks, external rewards, environments,
OTLP, NATS, trackers). So, before anything starts, `TenantPolicy.check(cfg)`:

- every file the config names (data, model, tokenizer, reward model, token files, TLS files)
  must resolve (links followed) inside one of the gateway's tenant roots;
- every outbound address (alerts.webhook.url, reward and environment addresses, the
  reference's, telemetry.otlp_endpoint, an MLflow server, W&B online, nats.url) must be a
  host (or host:port) of the gateway's allow-list; nats.url must be `embedded` otherwise;
- every token_env must be a variable the gateway passes to tenants;
- no part is named by import path (`pkg.module:function` would run code of the tenant's
  choosing in the learner), and no interpreter is chosen (a `python:` key of an adapter,
  e.g. `environment.textarena.python` or a reasoning_gym rule's `params.python`, names the
  program a service runs: any executable on the host, run as the gateway's user; a submitted
  run gets the adapters' default venvs). Alerts go to the run dir's own alerts file only (`alerts.events_file`
  is on or off: no path to name).

A refusal names the key, the value's kind and the rule, and which `meshrl gateway serve`
flag would allow it. `child_env()` is the launcher's whole environment: a few harmless
variables plus those named by --tenant-env (never the gateway's tokens file or secrets).

    policy = TenantPolicy(roots=[Path("/srv/data")], hosts=["judge.internal:443"], env_names=["JUDGE_TOKEN"])
    policy.check(cfg, base=runs_root)      # GatewayError INVALID_ARGUMENT naming key and rule
    subprocess.Popen(..., cwd=runs_root, env=policy.child_env(os.environ))
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from meshrl.gateway.errors import invalid

BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR")
DEFAULT_PORTS = {"http": 80, "https": 443}
INTERPRETER_KEY = "python"  # an adapter's interpreter (config/reward_rules.py, textarena.py, verifiers.py)
IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclass(frozen=True)
class TenantPolicy:
    roots: list[Path] = field(default_factory=list)  # --tenant-root: where a submitted run's files may be
    hosts: list[str] = field(default_factory=list)  # --tenant-host: HOST or HOST:PORT a submitted run may reach
    env_names: list[str] = field(default_factory=list)  # --tenant-env: variables passed to submitted runs

    def check(self, cfg, base: Path) -> None:
        """Refuse (GatewayError naming key and rule) what `cfg` may not reach; relative paths
        are taken from `base`, the submitted run's working directory (the runs root)."""
        for key, value in _files(cfg):
            self._inside_roots(key, Path(base) / Path(value).expanduser())
        for key, value in _addresses(cfg):
            self._allowed_host(key, value)
        for key, name in _token_envs(cfg):
            if name not in self.env_names:
                raise invalid(
                    f"{key}: a submitted run sees only the variables the gateway passes to tenants "
                    f"({', '.join(self.env_names) or 'none'}); `meshrl gateway serve --tenant-env {name}` "
                    "passes this one"
                )
        _no_import_paths(cfg.model_dump(mode="json"))
        _no_interpreters(cfg.model_dump(mode="json"))

    def check_tree(self, tree: dict) -> None:
        """The submitted tree before it is validated: validation looks a `module:function`
        part up (importing its parent packages), so such a name is refused first."""
        _no_import_paths(tree)
        _no_interpreters(tree)

    def child_env(self, environ) -> dict[str, str]:
        """The submitted run's environment: harmless basics and the named variables only."""
        return {name: environ[name] for name in (*BASE_ENV, *self.env_names) if name in environ}

    def _inside_roots(self, key: str, path: Path) -> None:
        resolved = path.resolve()
        if not any(resolved.is_relative_to(root.resolve()) for root in self.roots):
            raise invalid(
                f"{key}: a submitted run's files must lie in the gateway's tenant roots "
                f"({', '.join(map(str, self.roots)) or 'none declared'}); this path resolves outside "
                "them. `meshrl gateway serve --tenant-root DIR` declares one"
            )

    def _allowed_host(self, key: str, address: str) -> None:
        host, port = _host_port(address)
        if host is None or not ({host, f"{host}:{port}"} & set(self.hosts)):
            raise invalid(
                f"{key}: a submitted run may reach only the gateway's allowed hosts "
                f"({', '.join(self.hosts) or 'none'}); {host or 'this address'} is not one. "
                "`meshrl gateway serve --tenant-host HOST[:PORT]` allows one"
            )


def _files(cfg) -> list[tuple[str, str]]:
    """(key, path) of every file a config names."""
    out = [
        ("model.path", cfg.model.path),
        ("model.tokenizer", cfg.model.tokenizer),
        ("data.train", cfg.data.train),
        ("data.eval", cfg.data.eval),
        ("alerts.webhook.token_file", cfg.alerts.webhook and cfg.alerts.webhook.token_file),
    ]
    if cfg.model.gguf_file:
        out.append(("model.gguf_file", str(Path(cfg.model.path) / cfg.model.gguf_file)))
    if cfg.reward_model is not None:
        out.append(("reward_model.path", cfg.reward_model.path))
    for i, part in enumerate([*cfg.reward.components, *_environments(cfg)]):
        where = f"reward.components[{i}]" if i < len(cfg.reward.components) else "environment"
        out.append((f"{where}.token_file", part.token_file))
        if part.tls is not None:
            out += [(f"{where}.tls.{name}", getattr(part.tls, name)) for name in ("ca_file", "cert_file", "key_file")]
    return [(key, value) for key, value in out if value]


def _addresses(cfg) -> list[tuple[str, str]]:
    out = [(f"reward.components[{i}].address", c.address) for i, c in enumerate(cfg.reward.components)]
    out += [("environment.address", e.address) for e in _environments(cfg)]
    out += [
        ("reference.address", cfg.reference.address),
        ("telemetry.otlp_endpoint", cfg.telemetry.otlp_endpoint),
        ("telemetry.mlflow.tracking_uri", cfg.telemetry.mlflow.tracking_uri),
        ("alerts.webhook.url", cfg.alerts.webhook and cfg.alerts.webhook.url),
    ]
    if cfg.nats.url != "embedded":
        out += [("nats.url", url) for url in cfg.nats.url.split(",")]
    if "wandb" in cfg.telemetry.tracker_names and cfg.telemetry.wandb.mode == "online":
        out.append(("telemetry.wandb.mode", "https://api.wandb.ai"))
    return [(key, value) for key, value in out if value]


def _token_envs(cfg) -> list[tuple[str, str]]:
    out = [(f"reward.components[{i}].token_env", c.token_env) for i, c in enumerate(cfg.reward.components)]
    out += [("environment.token_env", e.token_env) for e in _environments(cfg)]
    out.append(("alerts.webhook.token_env", cfg.alerts.webhook and cfg.alerts.webhook.token_env))
    return [(key, value) for key, value in out if value]


def _environments(cfg) -> list:
    return [cfg.environment] if getattr(cfg, "environment", None) is not None else []


def _host_port(address: str) -> tuple[str | None, int | None]:
    """(host, port) of a URL or host:port; an http(s) URL without a port has its scheme's."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        return parts.hostname, parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return None, None


def _no_import_paths(tree, key: str = "") -> None:
    """A part named `package.module:function` would be imported and run by the learner."""
    if isinstance(tree, dict):
        for name, value in tree.items():
            _no_import_paths(value, f"{key}.{name}" if key else name)
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            _no_import_paths(value, f"{key}[{i}]")
    elif isinstance(tree, str) and IMPORT_PATH.match(tree):
        raise invalid(
            f"{key}: a submitted run may not name a part by import path (module:function): the "
            "learner would import and run that code as the gateway's user; use a built-in part"
        )


def _no_interpreters(tree, key: str = "") -> None:
    """A `python:` key with a value names the program a service starts for an adapter."""
    children = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for name, value in children:
        where = f"{key}[{name}]" if isinstance(tree, list) else f"{key}.{name}" if key else str(name)
        if name == INTERPRETER_KEY and value:
            raise invalid(
                f"{where}: a submitted run may not choose an interpreter (the service would run that "
                "program as the gateway's user); remove it: the adapters' default venvs are used"
            )
        _no_interpreters(value, where)
