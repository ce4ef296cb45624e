"""Built-in rule rewards, one file per rule; importing this package imports every file, whose
`@register_reward` registers it (the config reads the same decorators: meshrl.config.parts)."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
