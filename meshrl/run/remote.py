"""A run's remote client: the `meshrl` verbs' side of the gateway, one HTTP/JSON call to a
run's API, with the token in $MESHRL_GATEWAY_TOKEN (never on the command line, where `ps` shows it).

    MESHRL_GATEWAY_TOKEN=... meshrl status http://127.0.0.1:8080/runs/grpo-0412 [--json]
    MESHRL_GATEWAY_TOKEN=... meshrl pause|resume|checkpoint|stop http://127.0.0.1:8080/runs/grpo-0412
    MESHRL_GATEWAY_TOKEN=... meshrl scale http://127.0.0.1:8080/runs/grpo-0412 rollout=2

    call(url, "POST", "pause", {"reason": "look at the KL"})  # → the API's JSON answer

A URL is the dashboard's run page (…/runs/NAME); `call` asks …/api/runs/NAME/PATH. Every
failure is a LaunchError that says what to fix (no token, a token the gateway does not know
or whose role is too low, no such run, nothing listening there); the CLI prints it and exits 2.
Only urllib: importing this module keeps `meshrl` quick to start.

The token never leaves the gateway's origin: urllib copies every header, Authorization
included, to whatever a redirect's Location names, so a redirect to another scheme, host or
port is refused (a LaunchError naming it); one on the same origin is followed.

What the read-only verbs `meshrl trace` and `meshrl plot` fetch from a run URL:

    spans, linked = group_trace("http://127.0.0.1:8080/runs/grpo-0412", "g-0007")  # GetGroupTrace
    rows = metric_rows("http://127.0.0.1:8080/runs/grpo-0412")                     # StreamMetrics, so far

Those answers are the run dir's records carried as google.protobuf.Struct, whose numbers are
all doubles: whole numbers the readers count with (a span's depth and times, the step a
linked span trained) come back as ints here, so the waterfall reads as it does from the run
dir. Simplification: a double holds a span's Unix-ns time to ±128 ns, finer than the
waterfall shows.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request

from meshrl.errors import LaunchError

TOKEN_ENV = "MESHRL_GATEWAY_TOKEN"
ACTION_TIMEOUT_S = 130.0  # the gateway waits up to 120 s for a checkpoint to be written
HINTS = {
    401: f"; put a token from the gateway's tokens file in ${TOKEN_ENV}",
    403: f"; put a token with that role in ${TOKEN_ENV}",
}


def is_url(target) -> bool:
    """Whether a verb's RUN_DIR_OR_URL argument is a gateway URL rather than a local run dir."""
    return str(target).startswith(("http://", "https://"))


def run_name(url: str) -> str:
    """http://HOST:PORT/runs/NAME[/] → NAME; LaunchError for anything else."""
    parts = urllib.parse.urlsplit(url)
    run_path = parts.path.rstrip("/")
    if parts.scheme not in ("http", "https") or not parts.netloc or "/runs/" not in run_path:
        raise LaunchError(f"{url} is not a run's URL: use http://HOST:PORT/runs/NAME (the dashboard's run page)")
    return run_path.rsplit("/runs/", 1)[1].split("/")[0]


def api_url(url: str, path: str) -> str:
    """http://HOST:PORT/runs/NAME (+ path) → http://HOST:PORT/api/runs/NAME/path."""
    parts = urllib.parse.urlsplit(url)
    api_path = f"/api/runs/{run_name(url)}/{path}".rstrip("/")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, api_path, "", ""))


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(parts.scheme)


class SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the request's own origin, where the token already goes."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if origin(newurl) != origin(req.full_url):
            raise LaunchError(
                f"the gateway at {req.full_url} redirected ({code}) to {newurl}, another origin: "
                f"not followed, so the token is not sent there; use that gateway's URL directly "
                f"if you trust it"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


OPENER = urllib.request.build_opener(SameOriginRedirects)


def gateway_error(err: urllib.error.HTTPError) -> LaunchError:
    try:
        detail = json.loads(err.read() or b"{}").get("error", err.reason)
    except (ValueError, AttributeError):
        detail = f"{err.reason} (not the gateway's JSON: is this URL a `meshrl gateway serve`?)"
    return LaunchError(f"the gateway answered {err.code}: {detail}{HINTS.get(err.code, '')}")


def call(url: str, method: str, path: str, body: dict | None = None, timeout_s: float = 10.0) -> dict:
    """One request to the run's API; the JSON answer, or LaunchError naming what to fix."""
    token = os.environ.get(TOKEN_ENV)
    if not token:
        raise LaunchError(
            f"set {TOKEN_ENV} to a gateway token (viewer or above; operator to change a run) to ask {url}"
        )
    data = json.dumps(body or {}).encode() if method == "POST" else None
    request = urllib.request.Request(
        api_url(url, path),
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with OPENER.open(request, timeout=timeout_s) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as err:
        raise gateway_error(err) from None
    except urllib.error.URLError as err:
        raise LaunchError(
            f"cannot reach the gateway at {url}: {err.reason}; is `meshrl gateway serve` running there?"
        ) from None
    except TimeoutError:
        raise LaunchError(f"the gateway at {url} did not answer within {timeout_s:.0f} s") from None
    except ValueError:
        raise LaunchError(f"the answer from {url} is not JSON: is it a `meshrl gateway serve`?") from None


def act(url: str, path: str, body: dict | None = None) -> str:
    """POST a run action (pause, scale, ...) and return the gateway's one-line message."""
    return call(url, "POST", path, body, timeout_s=ACTION_TIMEOUT_S)["message"]


def number(value) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "-"


def outcome_lines(outcome: dict) -> list[str]:
    """A run no launcher runs, as the run dir tells it (the gateway's RunOutcome): how it ended,
    the final reward, held-out accuracy before and after when evaluated, and where final/ is."""
    if not outcome:
        return []
    before, after = outcome.get("accuracy_before"), outcome.get("accuracy_after")
    accuracy = "held-out accuracy: not evaluated"
    if before is not None or after is not None:
        where = f"after step {outcome.get('accuracy_after_step', 0)}" if after is not None else "no evaluation after"
        prompts = int(outcome.get("eval_prompts") or 0)
        accuracy = f"held-out accuracy: {number(before)} at start -> {number(after)} {where}" + (
            f" ({prompts} prompts)" if prompts else ""
        )
    final = outcome.get("final_model") or "none (final/ is written when the last step is trained)"
    return [
        f"outcome: {outcome['ended']}",
        f"final reward {number(outcome.get('final_reward'))}  {accuracy}",
        f"final model: {final}",
    ]


def describe(status: dict) -> str:
    run, learner = status["run"], status.get("learner") or {}
    lines = [
        f"run {run['name']}  ({'live, ' + run['run_id'] if run['live'] else 'no launcher here'}; "
        f"last step index {run['last_step']})"
    ]
    if learner:
        lines.append(
            learner.get("error")
            and f"learner  {learner['grpc']}: {learner['error']}"
            or f"learner  {learner['state']}  step {learner['step']}/{learner['total_steps'] or '-'}  "
            f"policy v{learner['policy_version']}  groups trained {learner['groups_trained']}"
        )
    lines += outcome_lines(status.get("outcome") or {})
    for r in status.get("replicas", []):
        weights = f"v{r['weights_version']}" if r.get("has_weights_version") else "-"
        lines.append(f"  {r['service']:<10} {r['replica']:<14} {weights:<6} {r['health'] or r['error']}")
    for q in status.get("queues", []):
        lines.append(
            f"  queue {q['stream']:<10} {q['consumer']:<10} pending {q['pending']}, in flight {q['ack_pending']}"
        )
    return "\n".join(lines)


def print_status(url: str, as_json: bool) -> int:
    status = call(url, "GET", "status")
    print(json.dumps(status, indent=1) if as_json else describe(status))
    return 0


SPAN_INTS = ("depth", "start_unix_ns", "end_unix_ns")
STEP_KEY = "meshrl.step"


def span_record(span: dict) -> dict:
    """One span of a GetGroupTrace answer with its whole-number fields as ints again."""
    out = dict(span, **{k: int(span[k]) for k in SPAN_INTS if k in span})
    attrs = span.get("attributes") or {}
    if isinstance(attrs.get(STEP_KEY), float):
        out["attributes"] = dict(attrs, **{STEP_KEY: int(attrs[STEP_KEY])})
    return out


def group_trace(url: str, group_id: str) -> tuple[list[dict], list[dict]]:
    """(the group's spans in tree order, the spans of other traces linking to it)."""
    answer = call(url, "GET", f"groups/{urllib.parse.quote(group_id, safe='')}/trace")
    return [span_record(s) for s in answer.get("spans", [])], [span_record(s) for s in answer.get("linked", [])]


def metric_rows(url: str) -> list[dict]:
    """Every metrics.jsonl row the run has written so far, in order."""
    return [record.get("row", {}) for record in call(url, "GET", "metrics").get("records", [])]
