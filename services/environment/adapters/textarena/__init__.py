"""textarena's single-player text games served over env.proto: a library worker child in the
textarena venv holds the games (handlers.py); environment.py maps them onto Reset/Step/Close."""
