"""Start a whole run on one machine: a supervisor for child processes and the local launcher."""
