"""reasoning-gym's procedural tasks as meshrl data, scored by their own scorers.

The library lives in its own venv (`bash scripts/adapter_venv.sh reasoning_gym`), never in
meshrl's: handler.py runs there as a child process (worker.py starts it and speaks JSON lines to
it), rows.py turns its entries into prompt rows (`meshrl data reasoning-gym`), answer.py reads
the answer out of a completion for the reward rule `reasoning_gym` (services/reward/rules).
"""
