"""Loss masks (token filters on the policy-gradient term), one file each, registered by
decorator (`registry.py`): `top_entropy` (TRL's top_entropy_quantile), `off_policy` (TRL's
off-policy sequence mask). `apply_loss_masks` runs the configured ones."""

from meshrl.algos.loss_masks.apply import apply_loss_masks  # noqa: F401
from meshrl.algos.registry import import_folder

import_folder(__name__, __path__)  # every file's decorators register its masks
