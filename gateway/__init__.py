"""The gateway: one process that serves the run API (protos/meshrl/gateway/v1) over gRPC and
HTTP/JSON from the same handlers, and the live web dashboard, for every run under a runs root.

    MESHRL_GATEWAY_TOKENS_FILE=tokens.yaml meshrl gateway serve --runs-root runs --port 8080

Five rooms (server, auth, runs, actions, api), listed from the ground up: a module imports
only from those above it in this list.
- server's ground: errors.py (GatewayError, with its gRPC code and HTTP status) and
  limits.py (request bytes, live streams per user);
- auth/: tokens.py (bearer tokens and roles), sessions.py (the dashboard's login cookie),
  browser.py (same-origin refusal, security headers), tenant.py (what a submitted run may reach);
- runs/: status.py (a run's status, live or ended), root.py (run names → run dirs),
  samples.py (a sample as the dashboard shows it);
- actions.py: pause / resume / checkpoint / stop / scale / export / submit / rollback;
- api/: dispatch.py (authorise, then call the handler), handlers.py (one function per RPC),
  grpc_server.py and http_app.py (the two transports; the HTTP app serves the dashboard's
  static/: plain HTML/JS/CSS, uPlot vendored in static/vendor/);
- server's roof: serve.py (both transports on one event loop, until a signal).
`meshrl gateway serve` is meshrl/cli/gateway.py. A run dir's files are read through meshrl.run
(records, audit, presence, status); the `meshrl` verbs' HTTP client is meshrl.run.remote.
"""
