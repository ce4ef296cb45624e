"""meshrl.run: the run directory, the shared record of a run, and everything that reads or
writes it from outside the services' own loops: the audit log (audit), the running launcher's
calling card (presence), a live run's status (status), `meshrl scale` requests (scale), the
secrets a process on this host joins a run with (secrets), its JSON lines files followed as
they grow (records), and the HTTP client of a gateway's run API (remote).

The middle floor: services, the gateway, the launcher and the CLI import it; it imports only
the ground (config, transport, telemetry, errors)."""
