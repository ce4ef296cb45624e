"""A Hugging Face sequence-classification model as a scalar reward: text → one float.

    rm = RewardModel("path/to/model", device="auto", max_length=512)
    rm.score(["prompt and response", ...])  # → [float, ...], one forward pass per batch

The model must have a single output (`num_labels: 1`, e.g. a Skywork / ArmoRM-style reward
head or any `*ForSequenceClassification` fine-tuned as a reward model). `device: auto` takes
the GPU when torch sees one. The text of an item is the chat template applied to its prompt
messages plus the response as the assistant's turn when the tokenizer has a template and
the item carries messages, else the rendered prompt followed by the response.
Simplification: one model per process, fp32 on CPU / the model's dtype on GPU; no
tensor parallelism (scale by running more replicas behind one address).
"""

from __future__ import annotations

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer


def pick_device(device: str) -> str:
    return ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device


class RewardModel:
    def __init__(self, path: str, *, device: str = "auto", max_length: int = 512):
        self.device, self.max_length = pick_device(device), max_length
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForSequenceClassification.from_pretrained(path).eval().to(self.device)
        if self.model.config.num_labels != 1:
            raise ValueError(
                f"reward model {path!r} has num_labels={self.model.config.num_labels}: a reward "
                f"model needs one output (num_labels: 1); use a model with a scalar reward head"
            )
        if self.tokenizer.pad_token is None:  # decoder-only models: pad with EOS (left as masked)
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model.config.pad_token_id = self.tokenizer.pad_token_id

    def text(self, prompt: str, messages: list[dict], response: str) -> str:
        if messages and getattr(self.tokenizer, "chat_template", None):
            turns = [*messages, {"role": "assistant", "content": response}]
            return self.tokenizer.apply_chat_template(turns, tokenize=False)
        return f"{prompt}{response}"

    @torch.no_grad()
    def score(self, texts: list[str]) -> list[float]:
        # numpy, then onto the model's device: the tokenizer's own "pt" tensors are made on
        # torch's default device, which need not be the model's
        encoded = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="np")
        batch = {k: torch.from_numpy(v).to(self.device) for k, v in encoded.items()}
        return self.model(**batch).logits[:, 0].float().cpu().tolist()
