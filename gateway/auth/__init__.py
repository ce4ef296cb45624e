"""Who may do what through the gateway: bearer tokens with roles (tokens.py), the dashboard's
login sessions (sessions.py), the browser's defences (browser.py), and the limits on a
submitted run, a tenant of the gateway's machine (tenant.py)."""
