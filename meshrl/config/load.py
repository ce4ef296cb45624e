"""YAML + presets + `a.b=c` overrides → a validated `RunConfig`.

Order, later wins: the preset named by `algorithm.preset` (from `meshrl/presets/`), the
user's YAML, then command-line overrides. Values in overrides are parsed as YAML, so
`trainer.bf16=true`, `rollout.sampling.stop=["\\n"]` and `model.path=/x` all work.
"""

import difflib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from meshrl.errors import ConfigError
from meshrl.config.schema import RunConfig
from meshrl.config.yaml_text import load_yaml

PRESETS_DIR = Path(__file__).resolve().parent.parent / "presets"


def available_presets() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def load_preset(name: str) -> dict:
    path = PRESETS_DIR / f"{name}.yaml"
    if not path.exists():
        raise ConfigError(f"algorithm.preset={name!r} is unknown; presets: {', '.join(available_presets())}")
    return load_yaml(path.read_text(), f"preset {name}") or {}


def parse_overrides(items: list[str]) -> dict:
    """['a.b=1', 'c=x'] → {'a': {'b': 1}, 'c': 'x'}."""
    tree: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {item!r} is not of the form key.path=value")
        node = tree
        *parents, leaf = key.strip().split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r}: {part!r} is set both as a value and as a section")
        node[leaf] = load_yaml(raw, f"override {key.strip()}=") if raw.strip() else ""
    return tree


def deep_merge(base: dict, top: dict) -> dict:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve_tree(tree: dict) -> dict:
    """Apply the preset under `algorithm.preset`, if any, beneath the user's choices."""
    algorithm = dict(tree.get("algorithm") or {})
    preset = algorithm.pop("preset", None)
    if preset:
        tree = deep_merge(load_preset(preset), {**tree, "algorithm": algorithm})
    run = tree.setdefault("run", {})
    run["dir"] = str(run.get("dir", "runs/${run.name}")).replace("${run.name}", run.get("name", "run"))
    return tree


def validate(tree: dict) -> RunConfig:
    try:
        return RunConfig.model_validate(tree)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err)) from None


def allowed_keys(loc: tuple) -> list[str]:
    """The keys a section accepts, for 'unknown key' messages."""
    model = RunConfig
    for part in loc:
        field = model.model_fields.get(str(part))
        annotation = getattr(field, "annotation", None)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            break
        model = annotation
    return sorted(model.model_fields)


def unknown_key_message(loc: tuple, shown: str) -> str:
    """'unknown key', the closest allowed key (a typo is the usual cause) and all of them."""
    allowed = allowed_keys(loc[:-1])
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown key{shown}{hint}; allowed here: {', '.join(allowed)}"


def error_message(e: dict) -> str:
    """One pydantic error as a sentence that says what is wrong and how to fix it."""
    given = e.get("input")
    shown = "" if isinstance(given, dict) else f" (got {given!r})"
    if e["type"] == "extra_forbidden":
        return unknown_key_message(e["loc"], shown)
    if e["type"] == "finite_number":
        return f"must be a finite number{shown}; NaN and ±inf are refused: give a real value"
    if e["type"] == "value_error":  # our validators' messages already name key, value and fix
        return str(e["ctx"]["error"])
    return f"{e['msg']}{shown}"


def format_validation_error(err: ValidationError) -> str:
    """One line (the CLI prints errors as one line): 'invalid config: a.b: why; c: why'."""
    problems = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"])
        problems.append(f"{key}: {error_message(e)}" if key else error_message(e))
    return "invalid config: " + "; ".join(problems)


def load_config(
    path: str | Path | None = None, overrides: list[str] | None = None, base: dict | None = None
) -> RunConfig:
    """Load a run config from YAML (or `base`, a dict) plus overrides. Raises ConfigError."""
    tree: dict[str, Any] = dict(base or {})
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"config file {path} does not exist")
        if path.is_dir():
            raise ConfigError(f"config file {path} is a directory; name the YAML file in it")
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise ConfigError(f"config file {path} cannot be read: {err}") from None
        document = load_yaml(text, f"config file {path}") or {}
        if not isinstance(document, dict):
            raise ConfigError(
                f"config file {path} holds a {type(document).__name__}, not a mapping of sections (model:, data:, ...)"
            )
        tree = deep_merge(tree, document)
    tree = deep_merge(tree, parse_overrides(overrides or []))
    return validate(resolve_tree(tree))


def dump_config(cfg: RunConfig) -> str:
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
