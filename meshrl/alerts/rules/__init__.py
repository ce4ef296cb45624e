"""The built-in alert rules, one file per family; the registry imports every file here on
its first lookup (meshrl.alerts.registry), which registers them all."""
