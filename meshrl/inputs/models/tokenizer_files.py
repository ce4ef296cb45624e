"""Write tokenizer files every reader understands, not only transformers 5.

transformers 5 saves the chat template to `chat_template.jinja`, names the class
`TokenizersBackend` and skips `special_tokens_map.json`; older transformers, vLLM's
fallbacks and other tools read `tokenizer_config.json["chat_template"]`,
`PreTrainedTokenizerFast` and the special-tokens map. This rewrites the config after
`tokenizer.save_pretrained(out)` so both kinds of reader work.
"""

from __future__ import annotations

import json
from pathlib import Path


def write_portable_tokenizer_files(out: str | Path, tokenizer, *, model_max_length: int) -> None:
    """Patch `out/tokenizer_config.json` and write `out/special_tokens_map.json`."""
    out = Path(out)
    config_path = out / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config["model_max_length"] = model_max_length
    if tokenizer.chat_template:
        config["chat_template"] = tokenizer.chat_template
    extra = config.pop("extra_special_tokens", None)
    if extra:
        config["additional_special_tokens"] = extra
    for key in ("is_local", "local_files_only"):  # load-time flags, not tokenizer facts
        config.pop(key, None)
    config_path.write_text(json.dumps(config, indent=2) + "\n")
    special = {
        k: getattr(tokenizer, k) for k in ("bos_token", "eos_token", "pad_token", "unk_token") if getattr(tokenizer, k)
    }
    if extra:
        special["additional_special_tokens"] = extra
    (out / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n")
