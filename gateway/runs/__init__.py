"""The runs the gateway shows: the runs root and its run dirs (root.py), a run's status, live or
ended (status.py), and a sample as the dashboard shows it (samples.py)."""
