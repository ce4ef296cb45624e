"""Built-in rule rewards; importing this package registers them all."""
from meshrl.services.reward.rules import (environment, exact_match, length_penalty,  # noqa: F401
                                          math_answer, regex_format)
