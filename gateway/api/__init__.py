"""The run API: one handler per RPC (handlers.py), the one door every call goes through
(dispatch.py: token, role, errors), and the two transports that bring calls to it
(grpc_server.py, http_app.py with the dashboard's pages)."""
