"""Rollout correction's parts, one family per file, registered by decorator (`registry.py`):
weights modes (`truncated.py`, `masked.py`, `icepop.py`), rejection criteria
(`rejection.py`), batch normalisation (`batch_norm.py`) and the weights at the level of the
loss's ratio (`level.py`). `meshrl.algos.rollout_correction` puts them together."""

from meshrl.algos.registry import import_folder

import_folder(__name__, __path__)  # every file's decorators register its parts
