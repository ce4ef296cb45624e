"""meshrl.security: the run's signing key (run_key.py), what only the learner may sign."""
