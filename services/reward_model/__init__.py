"""The learned reward-model service: a Hugging Face sequence-classification model served
as a RewardService (runs reference it as `kind: external`). See main.py."""
