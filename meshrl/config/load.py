"""YAML + presets + `a.b=c` overrides → a validated `RunConfig`.

Order, later wins: the preset named by `algorithm.preset` (from `meshrl/presets/`), the
user's YAML, then command-line overrides. Values in overrides are parsed as YAML, so
`trainer.bf16=true`, `rollout.sampling.stop=["\\n"]` and `model.path=/x` all work.

A preset is a name, looked up among the files of `meshrl/presets/`, never joined into a
path: `algorithm.preset: ../../tokens` is an unknown preset, not a file to read. Errors name
keys and short scalar values, never a loaded document's lists or mappings (whatever file
was read, none of it is echoed). `roots` (the gateway's) confines the config file itself.
"""

import difflib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from meshrl.config.parts import unknown_name
from meshrl.config.schema import RunConfig
from meshrl.config.yaml_text import MAX_DEPTH, load_yaml
from meshrl.errors import ConfigError

PRESETS_DIR = Path(__file__).resolve().parent.parent / "presets"


def available_presets() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def load_preset(name) -> dict:
    """The preset called `name`: a key of the presets folder's listing, never a path."""
    presets = {p.stem: p for p in PRESETS_DIR.glob("*.yaml")}
    if not isinstance(name, str) or name not in presets:
        raise ConfigError(unknown_name("algorithm.preset", shown(name), presets, "preset"))
    return load_yaml(presets[name].read_text(encoding="utf-8"), f"preset {name}") or {}


def shown(value, limit: int = 80) -> str:
    """A value as an error message may show it: a scalar's text, cut to `limit` characters."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_overrides(items: list[str]) -> dict:
    """['a.b=1', 'c=x'] → {'a': {'b': 1}, 'c': 'x'}."""
    tree: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"override {item!r} is not of the form key.path=value")
        node = tree
        *parents, leaf = key.strip().split(".")
        if len(parents) >= MAX_DEPTH:
            raise ConfigError(f"override key {shown(key.strip())} is deeper than {MAX_DEPTH} levels; no key is")
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
    """Apply the preset under `algorithm.preset`, if any, beneath the user's choices, and
    fill `${run.name}` into run.dir. A section that is no mapping is left for the schema to
    refuse by its key."""
    algorithm = tree.get("algorithm")
    if isinstance(algorithm, dict) and algorithm.get("preset"):
        rest = {k: v for k, v in algorithm.items() if k != "preset"}
        tree = deep_merge(load_preset(algorithm["preset"]), {**tree, "algorithm": rest})
    run = tree.setdefault("run", {})
    if isinstance(run, dict):
        name, folder = run.get("name", "run"), run.get("dir", "runs/${run.name}")
        run["dir"] = (
            folder.replace("${run.name}", name) if isinstance(folder, str) and isinstance(name, str) else folder
        )
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


SCALARS = (str, int, float, bool, type(None))


def error_message(e: dict) -> str:
    """One pydantic error as a sentence that says what is wrong and how to fix it. A scalar
    value is shown, cut short; a list or mapping never (it may be a whole loaded file)."""
    given = e.get("input")
    got = f" (got {shown(repr(given))})" if isinstance(given, SCALARS) else ""
    if e["type"] == "extra_forbidden":
        return unknown_key_message(e["loc"], got)
    if e["type"] == "finite_number":
        return f"must be a finite number{got}; NaN and ±inf are refused: give a real value"
    if e["type"] == "value_error":  # our validators' messages already name key, value and fix
        return str(e["ctx"]["error"])
    return f"{e['msg']}{got}"


def key_part(part) -> str:
    """One step of an error's key path: a name as it is, anything else (a number, a key with
    a newline or a dot in it) as its repr, cut short."""
    if isinstance(part, str) and part.isprintable() and part and "." not in part:
        return shown(part, 64)
    return shown(repr(part), 64)


def one_line(text: str) -> str:
    """`text` with its control characters (newlines) written as escapes: an error is one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def format_validation_error(err: ValidationError) -> str:
    """One line (the CLI prints errors as one line): 'invalid config: a.b: why; c: why'."""
    problems = []
    for e in err.errors():
        key = ".".join(key_part(p) for p in e["loc"])
        problems.append(f"{key}: {error_message(e)}" if key else error_message(e))
    return "invalid config: " + "; ".join(problems)


def read_document(path: Path, roots: Iterable[Path] | None = None) -> dict:
    """The mapping in the YAML file `path` (inside one of `roots` when they are given)."""
    if roots is not None and not any(path.resolve().is_relative_to(Path(r).resolve()) for r in roots):
        raise ConfigError(f"config file {path} lies outside the folders configs are read from here")
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
    return document


def load_config(
    path: str | Path | None = None,
    overrides: list[str] | None = None,
    base: dict | None = None,
    *,
    roots: Iterable[Path] | None = None,
    check_tree: Callable[[dict], None] | None = None,
) -> RunConfig:
    """Load a run config from YAML (or `base`, a dict) plus overrides. Raises ConfigError.
    `roots`: the folders `path` must lie in; `check_tree`: a caller's check of the merged tree
    before anything in it is looked up (the gateway refuses parts named by import path there)."""
    tree: dict[str, Any] = dict(base or {})
    try:
        if path is not None:
            tree = deep_merge(tree, read_document(Path(path), roots))
        tree = deep_merge(tree, parse_overrides(overrides or []))
        if check_tree is not None:
            check_tree(tree)
        return validate(resolve_tree(tree))
    except ConfigError as err:
        raise ConfigError(one_line(str(err))) from None


def dump_config(cfg: RunConfig) -> str:
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
