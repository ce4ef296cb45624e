"""Policy losses, one file per family; importing this package registers them all.

Every loss has the signature

    fn(*, logprobs [B, T], old_logprobs [B, T], advantages [B, T], response_mask [B, T],
       epsilon=0.2, epsilon_high=None, dual_clip_c=None, importance_sampling_level=None, **_)
      -> PolicyLossResult(loss_mat [B, T] (zero on padding), metrics: dict[str, tensor])

and carries `default_agg`, its paper's loss aggregation mode. Look one up with
`meshrl.algos.get_policy_loss`. DPO's preference loss is `meshrl.algos.dpo_loss` (it takes
sequence pairs, not this signature).
"""

from meshrl.algos.registry import import_folder

import_folder(__name__, __path__)  # every file's decorators register its losses
