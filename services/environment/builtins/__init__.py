"""The built-in environments, one file each; the registry imports every file here on its first
lookup (meshrl.services.environment.registry), whose `@register_builtin` registers it."""
