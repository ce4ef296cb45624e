"""YAML that people hand meshrl (a run config, an override's value, the gateway's tokens file),
parsed safely and within limits, every problem a ConfigError of one line.

    tree = load_yaml(path.read_text(), f"config file {path}")

PyYAML's safe loader builds no objects, but an alias is a reference: nine levels of nine
aliases ("billion laughs") are a few hundred bytes that expand to 9^9 values once the config
is validated or dumped. So a document is refused when it is over MAX_YAML_BYTES, uses more
than MAX_ALIASES aliases, or expands to more than MAX_VALUES values (counted as walked,
stopping at the limit). No real config comes near any of them (the largest example has
under 200 values and no alias).

Two more rules: a document nested deeper than MAX_DEPTH (PyYAML's composer recurses once per
level, so `[[[[...` a few thousand deep was a RecursionError, and deep trees recurse again in
every check after it), and a key given twice in one mapping (YAML says a key is unique;
PyYAML silently kept the last, so a stray second `steps:` won over the one the author read).
Neither message quotes the document: the key's name and its lines only.
"""

from __future__ import annotations

from typing import Any

import yaml

from meshrl.errors import ConfigError

MAX_YAML_BYTES = 1 << 20  # 1 MiB: the gateway's request cap too
MAX_ALIASES = 64
MAX_VALUES = 100_000
MAX_DEPTH = 32  # nested mappings/lists; the deepest real config is 5 levels (reward.components[].tls.ca_file)
MERGE_TAG = "tag:yaml.org,2002:merge"


class _CountingLoader(yaml.SafeLoader):
    """SafeLoader that counts the aliases it resolves and stops past MAX_ALIASES."""

    def __init__(self, stream, source: str):
        super().__init__(stream)
        self.source, self.aliases, self.depth = source, 0, 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise ConfigError(
                    f"{self.source} uses more than {MAX_ALIASES} YAML aliases (*name); write the values out instead"
                )
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise ConfigError(
                    f"{self.source} nests deeper than {MAX_DEPTH} levels (line {line}); a config is a "
                    "few levels of sections: flatten it"
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node, deep=False):
        """A key given twice in one mapping is refused (merged `<<:` keys may be overridden)."""
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if _hashable(key) and key in seen:
                    raise ConfigError(
                        f"{self.source}: key {_shown(key)} is given twice in one mapping (lines "
                        f"{seen[key]} and {line}); keep one"
                    )
                if _hashable(key):
                    seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _hashable(key) -> bool:
    try:
        hash(key)
    except TypeError:
        return False
    return True


def _shown(key) -> str:
    """A key for a message: its repr, cut short (a key is a name, not a document)."""
    text = repr(key)
    return text if len(text) <= 64 else text[:61] + "..."


def _one_line(err: yaml.YAMLError) -> str:
    """A YAML error as 'problem (line L, column C)'."""
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    mark = getattr(err, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem


def _check_size(tree: Any, source: str) -> None:
    """ConfigError once walking `tree` (aliases expanded) passes MAX_VALUES values or MAX_DEPTH
    levels (aliases of nested lists nest again: the composer saw each level only once)."""
    stack, seen = [(tree, 0)], 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise ConfigError(
                f"{source} expands to more than {MAX_VALUES:,} values (aliases of aliases?); write a smaller config"
            )
        if depth > MAX_DEPTH:
            raise ConfigError(
                f"{source} nests deeper than {MAX_DEPTH} levels once its aliases are expanded; flatten it"
            )
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)


def load_yaml(text: str, source: str) -> Any:
    """The document in `text`; ConfigError naming `source` and the rule it broke."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
        raise ConfigError(
            f"{source} is over {MAX_YAML_BYTES >> 20} MiB; a config is a few KiB, keep data in the data files"
        )
    try:
        loader = _CountingLoader(text, source)  # the reader refuses control characters here
        try:
            tree = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as err:
        raise ConfigError(f"{source} is not valid YAML: {_one_line(err)}") from None
    _check_size(tree, source)
    return tree


__all__ = ["MAX_ALIASES", "MAX_DEPTH", "MAX_VALUES", "MAX_YAML_BYTES", "load_yaml"]
