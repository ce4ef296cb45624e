"""How the offline DPO path weights log-probs before the preference loss: LD-DPO's length
desensitisation (`ld.py`) and WPO's pair weights (`wpo.py`), registered by decorator
(`registry.py`) so `meshrl algos` lists them; each is switched on by its config key."""

from meshrl.algos.preference_weighting.ld import ld_weighted_sums  # noqa: F401
from meshrl.algos.preference_weighting.wpo import wpo_pair_weights  # noqa: F401
