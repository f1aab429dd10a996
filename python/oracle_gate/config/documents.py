"""Reading the gate's YAML and JSON files within fixed limits, keeping 1-based lines.

One technique for every YAML file (invariants.yaml and the YAML ledgers): the
file is *composed* into PyYAML nodes, never constructed, and a ``NodeReader``
validates the nodes, so every error names the line of the node at fault.
Composing is bounded: a file larger than ``MAX_BYTES``, nested deeper than
``MAX_DEPTH``, with more than ``MAX_ALIASES`` aliases, a recursive alias, or
aliases that expand the document by more than ``MAX_EXPANSION`` nodes (an
"alias bomb": a few hundred bytes that expand to gigabytes) is an error before
anything walks it. JSON (seeds.jsonl lines, lockfiles) gets the same size and
depth limits and refuses duplicate keys.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TypeVar

import yaml

from oracle_gate.errors import GateError

__all__ = [
    "MAX_ALIASES",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_EXPANSION",
    "NodeReader",
    "compose_yaml",
    "kind_of",
    "load_json",
    "parse_date",
]

MAX_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
MAX_ALIASES = 100
MAX_EXPANSION = 100_000

T = TypeVar("T")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
# libyaml's loader, where PyYAML was built with it; the characters PyYAML's own reader
# refuses (libyaml takes some of them).
_LIBYAML: type[yaml.CSafeLoader] | None = getattr(yaml, "CSafeLoader", None)
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE


class _LimitError(yaml.YAMLError):
    def __init__(self, problem: str, mark: yaml.Mark | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


class _BoundedLoader(yaml.SafeLoader):
    """A SafeLoader whose composer counts nesting depth and aliases as it goes.

    PyYAML's composer recurses once per level, so the depth limit also keeps a
    deeply nested file from reaching Python's recursion limit.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0
        self.aliases = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _LimitError(f"more than {MAX_ALIASES} aliases", mark)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _LimitError(f"nested deeper than {MAX_DEPTH} levels", mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        yield from node.value
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a recursive alias, and aliases that expand the document past the limit.

    An alias makes two places share one node; a reader visits it once per
    place. The weight of a node is what a reader visits below it, computed once
    per node; the recursion is as deep as the (bounded) nesting.
    """
    weights: dict[int, int] = {}
    open_nodes: set[int] = set()

    def weight(node: yaml.Node) -> int:
        key = id(node)
        if key in weights:
            return weights[key]
        if key in open_nodes:
            raise _LimitError("recursive alias: a node contains itself", node.start_mark)
        open_nodes.add(key)
        total = 1 + sum(weight(child) for child in _children(node))
        open_nodes.discard(key)
        if total - len(weights) > MAX_EXPANSION:
            raise _LimitError(
                f"aliases expand it by more than {MAX_EXPANSION} nodes", node.start_mark
            )
        weights[key] = total
        return total

    weight(root)


def compose_yaml(text: bytes, path: str, error: type[GateError]) -> yaml.Node | None:
    """The YAML node tree of ``text`` (None for an empty document), within the limits.

    Raises:
        error: ``text`` is too large, not UTF-8, not valid YAML, or over a
            limit; the error names ``path`` and, where known, the 1-based line.
    """
    if len(text) > MAX_BYTES:
        raise error(f"is larger than {MAX_BYTES // (1024 * 1024)} MiB", path)
    try:
        source = text.decode("utf-8")
    except UnicodeDecodeError as caught:
        raise error("is not valid UTF-8", path, text.count(b"\n", 0, caught.start) + 1) from None
    try:
        root, aliases = _compose(source)
    except yaml.reader.ReaderError as caught:  # its text is two lines, and has no line
        character = caught.character
        code = ord(character) if isinstance(character, str) else character
        raise error(
            f"invalid YAML: unacceptable character #x{code:04x}: {caught.reason}",
            path,
            source.count("\n", 0, caught.position) + 1,
        ) from None
    except yaml.YAMLError as caught:
        mark = getattr(caught, "problem_mark", None)
        problem = getattr(caught, "problem", None) or caught
        raise error(
            f"invalid YAML: {problem}", path, mark.line + 1 if mark is not None else None
        ) from None
    # Without an alias every node has one place, and nothing can expand.
    if root is not None and aliases:
        try:
            _check_expansion(root)
        except _LimitError as caught:
            mark = caught.problem_mark
            line = mark.line + 1 if mark else None
            raise error(f"invalid YAML: {caught.problem}", path, line) from None
    return root


def _compose(source: str) -> tuple[yaml.Node | None, int]:
    """The node tree of ``source`` and how many aliases it has."""
    taken, root, aliases = _compose_with_libyaml(source)
    if taken:
        return root, aliases
    loader = _BoundedLoader(source)  # its reader already refuses control characters
    try:
        return loader.get_single_node(), loader.aliases
    finally:
        loader.dispose()


def _compose_with_libyaml(source: str) -> tuple[bool, yaml.Node | None, int]:
    """(True, the node tree, its aliases) from libyaml's composer, ten times the
    pure-Python one's speed on a large invariants.yaml, when the document is within the
    depth and alias limits and libyaml takes it; else (False, None, 0), and the
    pure-Python composer reads it, so every error is worded by one composer, whether
    PyYAML was built with libyaml or not.

    The limits are counted on libyaml's event stream first, which is flat: the composer
    recurses once per level, in C, and must never see a document nested past them.
    """
    if _LIBYAML is None or _NON_PRINTABLE.search(source):
        return False, None, 0
    try:
        aliases = _within_limits(yaml.parse(source, Loader=_LIBYAML))
        if aliases is None:
            return False, None, 0
        return True, yaml.compose(source, Loader=_LIBYAML), aliases
    except yaml.YAMLError:
        return False, None, 0


def _within_limits(events: Iterator[yaml.Event]) -> int | None:
    """How many aliases the events have, or None past a limit."""
    depth = aliases = 0
    for event in events:
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES or depth >= MAX_DEPTH:
                return None
        elif isinstance(event, yaml.CollectionStartEvent | yaml.ScalarEvent):
            if depth >= MAX_DEPTH:
                return None
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return aliases


def kind_of(node: yaml.Node) -> str:
    """How a message shows a node that is not what was expected."""
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return f"{node.value!r}"


def parse_date(text: str) -> datetime.date | None:
    """``text`` as a YYYY-MM-DD calendar date, or None (2027-02-30 is None)."""
    if _DATE.fullmatch(text) is None:
        return None
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        return None


class NodeReader:
    """Validates YAML nodes of one file, raising ``error`` at the node's 1-based line."""

    def __init__(self, path: str, error: type[GateError]) -> None:
        self.path = path
        self.error = error

    def fail(self, node: yaml.Node, message: str) -> GateError:
        return self.error(message, self.path, node.start_mark.line + 1)

    def raise_at(self, node: yaml.Node, message: str) -> NoReturn:
        raise self.fail(node, message)

    def mapping(self, node: yaml.Node, what: str, allowed: frozenset[str]) -> dict[str, yaml.Node]:
        """The mapping's values by key; an unknown or repeated key is an error."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{what} must be a mapping, found {kind_of(node)}")
        result: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str) or key not in allowed or key_node.tag == _MERGE:
                expected = ", ".join(sorted(allowed))
                raise self.fail(
                    key_node, f"unknown key {key!r} in {what}; expected one of {expected}"
                )
            if key in result:
                raise self.fail(key_node, f"key {key!r} appears twice in {what}")
            result[key] = value_node
        return result

    def string(self, node: yaml.Node, what: str) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag != _STR:
            raise self.fail(node, f"{what} must be a string, found {kind_of(node)}")
        return str(node.value)

    def optional_string(self, node: yaml.Node | None, what: str) -> str | None:
        """A string, or None for an absent key or an explicit null."""
        if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _NULL):
            return None
        return self.string(node, what)

    def number(self, node: yaml.Node, what: str, convert: Callable[[str], T]) -> T:
        if not isinstance(node, yaml.ScalarNode) or node.tag not in (_INT, _FLOAT):
            raise self.fail(node, f"{what} must be a number, found {kind_of(node)}")
        try:
            return convert(node.value)
        except ValueError as error:
            raise self.fail(node, f"{what} must be a number, found {node.value!r}") from error

    def date(self, node: yaml.Node, what: str) -> datetime.date:
        """A YYYY-MM-DD date, quoted or not; an impossible date is an error here."""
        found = parse_date(node.value) if isinstance(node, yaml.ScalarNode) else None
        if found is None:
            raise self.fail(node, f"{what} must be a YYYY-MM-DD date, found {kind_of(node)}")
        return found

    def items(self, node: yaml.Node | None, what: str) -> list[yaml.Node]:
        """The entries of a list (an absent key or null is an empty list)."""
        if node is None or (isinstance(node, yaml.ScalarNode) and node.tag == _NULL):
            return []
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"{what} must be a list, found {kind_of(node)}")
        return list(node.value)

    def strings(
        self, node: yaml.Node | None, what: str, check: Callable[[str], str | None] | None = None
    ) -> tuple[str, ...]:
        if node is None:
            return ()
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"{what} must be a list of strings, found {kind_of(node)}")
        items: list[str] = []
        for item in node.value:
            text = self.string(item, f"each entry of {what}")
            problem = check(text) if check else None
            if problem:
                raise self.fail(item, f"{what} entry {text!r} {problem}")
            items.append(text)
        return tuple(items)

    def plain(self, node: yaml.Node) -> Any:
        """A free-form value as plain Python (str, int, float, bool, None, list, dict).

        Keys must be unique strings; dates stay the text they were written as,
        so an impossible date is kept as text, never a crash.
        """
        if isinstance(node, yaml.SequenceNode):
            return [self.plain(item) for item in node.value]
        if isinstance(node, yaml.MappingNode):
            result: dict[str, Any] = {}
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if not isinstance(key, str) or key_node.tag == _MERGE:
                    raise self.fail(key_node, f"a mapping key must be a string, found {key!r}")
                if key in result:
                    raise self.fail(key_node, f"key {key!r} appears twice")
                result[key] = self.plain(value_node)
            return result
        if node.tag in (_INT, _FLOAT, _NULL, "tag:yaml.org,2002:bool"):
            loader = yaml.SafeLoader("")
            try:
                return loader.construct_object(node)
            except (ValueError, yaml.YAMLError) as error:
                raise self.fail(node, f"cannot read value {node.value!r}") from error
        return str(node.value)


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def _depth(value: Any) -> int:
    """How deeply ``value`` nests lists and dicts, without recursing."""
    deepest = 0
    pending = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, level)
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, level + 1) for child in children)
    return deepest


def _line_of_key(text: str, key: str, occurrence: int) -> int | None:
    """The line of the ``occurrence``-th ``"key":`` in ``text`` (1-based), if any."""
    pattern = re.compile(re.escape(json.dumps(key)) + r"\s*:")
    found = list(pattern.finditer(text))
    if len(found) < occurrence:
        return None
    return text.count("\n", 0, found[occurrence - 1].start()) + 1


def load_json(text: str, path: str, line: int, error: type[GateError]) -> Any:
    """One JSON value from ``text`` (which starts on 1-based ``line`` of ``path``).

    Raises:
        error: not JSON, a key repeated in one object, larger than
            ``MAX_BYTES`` or nested deeper than ``MAX_DEPTH``.
    """
    if len(text) > MAX_BYTES:
        raise error(f"is larger than {MAX_BYTES // (1024 * 1024)} MiB", path, line)
    try:
        value = json.loads(text, object_pairs_hook=_unique_pairs)
    except json.JSONDecodeError as caught:
        raise error(f"is not valid JSON: {caught.msg}", path, line + caught.lineno - 1) from None
    except _DuplicateKeyError as caught:
        where = _line_of_key(text, caught.key, 2)
        at = line + where - 1 if where is not None else line
        raise error(f"key {caught.key!r} appears twice in one object", path, at) from None
    except RecursionError:
        raise error(f"nested deeper than {MAX_DEPTH} levels", path, line) from None
    except ValueError as caught:  # an integer of over 4300 digits, for one
        raise error(f"is not valid JSON: {caught}", path, line) from None
    if _depth(value) > MAX_DEPTH:
        raise error(f"nested deeper than {MAX_DEPTH} levels", path, line)
    return value
