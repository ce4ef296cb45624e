"""Batch resampling (PF-PPO), its reweighting methods registered by decorator (`registry.py`)."""

from meshrl.algos.registry import import_folder
from meshrl.algos.resampling.pf_ppo import pf_ppo_rows  # noqa: F401

import_folder(__name__, __path__)  # every file's decorators register its methods
