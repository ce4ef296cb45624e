"""Model loading for every service: HF dirs and GGUF files, tiny test models, SmolLM2 fetch.

- `meshrl.inputs.models.load`: `load_causal_lm`, `load_tokenizer` (HF safetensors dir or GGUF file)
- `meshrl.inputs.models.tiny`: `build_tiny_model_dir` (tiny random Llama + char-level ChatML tokenizer)
- `meshrl.inputs.models.tiny_gguf`: `build_tiny_gguf` (that tiny model as an F32 GGUF, for GGUF tests)
- `meshrl.inputs.models.tokenizer_files`: tokenizer files older readers (and vLLM fallbacks) expect
- `meshrl.inputs.models.fetch`: `fetch_smollm2` (SmolLM2-135M-Instruct as a safetensors dir, made once)

Importing this package imports nothing heavy; torch and transformers load on first use.
"""
