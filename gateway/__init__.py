"""The gateway: one process that serves the run API (protos/meshrl/gateway/v1) over gRPC and
HTTP/JSON from the same handlers, and the live web dashboard, for every run under a runs root.

    MESHRL_GATEWAY_TOKENS_FILE=tokens.yaml meshrl gateway serve --runs-root runs --port 8080

Layout: auth.py (bearer tokens and roles), runs.py (run names → run dirs), status.py (a live run's learner, replicas and queues),
actions.py (pause / resume / checkpoint / stop / scale / export / submit / rollback),
handlers.py (one function per RPC), dispatch.py (authorise, then call the handler),
grpc_server.py and http_app.py (the two transports), http_session.py (the dashboard's
login cookie), app.py (routes + static files), serve.py (both transports on one event
loop), cli.py (`meshrl gateway serve`), static/ (the dashboard: plain HTML/JS/CSS, uPlot
vendored in static/vendor/). A run dir's files are read through meshrl.run (records, audit,
presence, status); the `meshrl` verbs' HTTP client is meshrl.run.remote.
"""
