"""meshrl.cli.doctor: `meshrl doctor [CONFIG]` checks a machine and a run config before a run.

    results = run_doctor("run.yaml")            # list[Check]: name, status, detail, fix
    exit_code = cmd_doctor(args)                # prints the table; 0 = all pass

Checks: accelerators, 2-rank gloo all-reduce, nats-server binary, NATS + JetStream, model,
data, disk for K checkpoints, vLLM importable, external reward services healthy.
"""

from meshrl.cli.doctor.check import Check
from meshrl.cli.doctor.cli import add_subcommand, cmd_doctor, render_table
from meshrl.cli.doctor.run import run_doctor

__all__ = ["Check", "run_doctor", "cmd_doctor", "add_subcommand", "render_table"]
