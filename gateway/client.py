"""`meshrl status http://HOST:PORT/runs/NAME`: a run's status through the gateway, with the
token in $MESHRL_GATEWAY_TOKEN (never on the command line, where `ps` shows it).

    MESHRL_GATEWAY_TOKEN=... meshrl status http://127.0.0.1:8080/runs/grpo-0412 [--json]

Accepts the dashboard's run-page URL (…/runs/NAME) and prints the learner line and one row
per replica (weights version, health), then the queues; --json prints the API's answer.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request

from meshrl.ops.launch.errors import LaunchError

TOKEN_ENV = "MESHRL_GATEWAY_TOKEN"


def status_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    path = parts.path.rstrip("/")
    if "/runs/" not in path:
        raise LaunchError(f"{url} is not a run's URL: use http://HOST:PORT/runs/NAME (the dashboard's run page)")
    name = path.rsplit("/runs/", 1)[1].split("/")[0]
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, f"/api/runs/{name}/status", "", ""))


def fetch_status(url: str, timeout_s: float = 10.0) -> dict:
    token = os.environ.get(TOKEN_ENV)
    if not token:
        raise LaunchError(f"set {TOKEN_ENV} to a gateway token (viewer or above) to ask {url}")
    request = urllib.request.Request(status_url(url), headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as err:
        detail = json.loads(err.read() or b"{}").get("error", err.reason)
        raise LaunchError(f"the gateway answered {err.code}: {detail}") from None
    except urllib.error.URLError as err:
        raise LaunchError(f"cannot reach the gateway at {url}: {err.reason}") from None


def describe(status: dict) -> str:
    run, learner = status["run"], status.get("learner") or {}
    lines = [f"run {run['name']}  ({'live, ' + run['run_id'] if run['live'] else 'not running'}; last step {run['last_step']})"]
    if learner:
        lines.append(learner.get("error") and f"learner  {learner['grpc']}: {learner['error']}" or
                     f"learner  {learner['state']}  step {learner['step']}/{learner['total_steps']}  "
                     f"policy v{learner['policy_version']}  groups trained {learner['groups_trained']}")
    for r in status.get("replicas", []):
        weights = f"v{r['weights_version']}" if r.get("has_weights_version") else "-"
        lines.append(f"  {r['service']:<10} {r['replica']:<14} {weights:<6} {r['health'] or r['error']}")
    for q in status.get("queues", []):
        lines.append(f"  queue {q['stream']:<10} {q['consumer']:<10} pending {q['pending']}, in flight {q['ack_pending']}")
    return "\n".join(lines)


def print_status(url: str, as_json: bool) -> int:
    status = fetch_status(url)
    print(json.dumps(status, indent=1) if as_json else describe(status))
    return 0
