"""Built-in rule rewards; importing this package registers them all."""
from meshrl.services.reward.rules import exact_match, length_penalty, math_answer, regex_format  # noqa: F401
