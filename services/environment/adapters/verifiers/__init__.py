"""verifiers environments served by the environment service (docs/environments.md,
"Environments you already have"). The library runs in its own venv, in a library worker
child (meshrl.transport.library) serving handlers.py; the vf_*.py files beside it are that
child's too (they import verifiers, never meshrl). environment.py and start.py are the
service's side; paths.py says where the handlers script and the default interpreter are."""
