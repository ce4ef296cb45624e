"""Preference losses for the offline DPO path, one file per family; importing registers them.

Every loss has the signature

    fn(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected [B] summed log-probs,
       chosen_lengths, rejected_lengths [B] response token counts (or None), beta, state,
       **options) -> per-pair loss [B]

(`register_preference_loss`). The reference log-probs arrive detached. TRL's names and
formulas (`DPOConfig.loss_type`); `meshrl.algos.dpo_loss` takes one name or a weighted list.
"""

from meshrl.algos.registry import import_folder

import_folder(__name__, __path__)  # every file's decorators register its losses
