"""The YAML composer (``config/documents.py``): libyaml's where PyYAML has it, for speed,
giving the same node tree as the pure-Python bounded composer, which alone words errors."""

from __future__ import annotations

import pytest
import yaml

from oracle_gate.config import documents
from oracle_gate.config.documents import MAX_ALIASES, MAX_DEPTH, compose_yaml
from oracle_gate.errors import ConfigError

needs_libyaml = pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML without libyaml")

# What a reader of the tree can see: tags, values, lines and columns, shapes, and which
# nodes an alias shares (PyYAML's composer says "" where libyaml says None for the style
# of a plain scalar; nothing reads a style).
SAME = {
    "rows": (
        "version: 1\nowners: ['@team']\nrows:\n  - id: r\n    globs: [\"a/*.py\"]\n"
        "    budget: {examples: 10, seconds: 5}\n"
    ),
    "anchors and merge keys": (
        "base: &b {seconds: 5}\nrow:\n  <<: *b\n  again: *b\nlist: &l [1, 2]\nmore: *l\n"
    ),
    "block scalars and comments": (
        "# head\nreason: |\n  two\n  lines\nfolded: >-\n  one\n  line  # not a comment\n"
    ),
    "quoting and escapes": "a: 'it''s'\nb: \"tab\\there \\u00e9\"\nc: ~\nd: 2027-01-31\ne: 1e3\n",
    "unicode and explicit tags": "name: Zoë 名前\nn: !!str 12\nempty:\nflow: {a: [b, {c: d}]}\n",
    "document markers": "---\nkey: value\n...\n",
    "empty": "",
    "only a comment": "# nothing\n",
}


def _shape(node: yaml.Node | None, seen: dict[int, int] | None = None) -> object:
    seen = {} if seen is None else seen
    if node is None:
        return None
    if id(node) in seen:
        return ("alias of", seen[id(node)])
    seen[id(node)] = len(seen)
    where = (node.tag, node.start_mark.line, node.start_mark.column, node.end_mark.line)
    if isinstance(node, yaml.ScalarNode):
        return (*where, node.value)
    if isinstance(node, yaml.SequenceNode):
        return (*where, node.flow_style, [_shape(child, seen) for child in node.value])
    pairs = [(_shape(k, seen), _shape(v, seen)) for k, v in node.value]
    return (*where, node.flow_style, pairs)


def _pure_python(source: str) -> yaml.Node | None:
    loader = documents._BoundedLoader(source)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


@needs_libyaml
@pytest.mark.parametrize("source", SAME.values(), ids=SAME.keys())
def test_libyaml_composes_the_same_tree_as_the_pure_python_composer(source: str) -> None:
    taken, root, _ = documents._compose_with_libyaml(source)
    assert taken
    assert _shape(root) == _shape(_pure_python(source))


# What libyaml is never given the last word on: each is left to the pure-Python composer.
LEFT = {
    "too deep": "a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
    "too many aliases": "a: &a 1\nb: [" + ", ".join(["*a"] * (MAX_ALIASES + 1)) + "]\n",
    "a control character": "a: b\x07\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "invalid": "a: [1, 2\n",
}


@needs_libyaml
@pytest.mark.parametrize("source", LEFT.values(), ids=LEFT.keys())
def test_what_libyaml_refuses_or_the_limits_forbid_is_left_to_the_python_composer(
    source: str,
) -> None:
    assert documents._compose_with_libyaml(source) == (False, None, 0)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (LEFT["too deep"], f"invalid YAML: nested deeper than {MAX_DEPTH} levels"),
        (LEFT["too many aliases"], f"invalid YAML: more than {MAX_ALIASES} aliases"),
        (
            LEFT["a control character"],
            "pkg/invariants.yaml:1: invalid YAML: unacceptable character #x0007: special "
            "characters are not allowed",
        ),
        (LEFT["two documents"], "invalid YAML: but found another document"),
    ],
    ids=["too deep", "too many aliases", "a control character", "two documents"],
)
def test_errors_are_worded_by_the_python_composer_alone(source: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        compose_yaml(source.encode(), "pkg/invariants.yaml", ConfigError)
    assert message in str(caught.value)
    assert str(caught.value).startswith("pkg/invariants.yaml:")
    assert "\n" not in str(caught.value)
