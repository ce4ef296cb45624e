"""Model math shared by services: per-token response log-probs and entropy (`logprobs`)."""
from meshrl.model.logprobs import ResponseLogprobs, response_logprobs, sequence_logprobs, token_logprobs

__all__ = ["ResponseLogprobs", "response_logprobs", "sequence_logprobs", "token_logprobs"]
