"""OpenEnv environments served over env.proto: each episode is one WebSocket session on an
OpenEnv server (session.py), mapped onto Reset/Step/Close by environment.py."""
