"""Rollout correction's parts, one file each: how the engine/trainer mismatch weights and
masks the loss (`meshrl.algos.rollout_correction` puts them together)."""
