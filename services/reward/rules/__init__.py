"""Built-in rule rewards, one file per rule; the registry imports every file here on its first
lookup (meshrl.services.reward.registry), whose `@register_reward` registers it."""
