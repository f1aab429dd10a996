"""What the package records, gathered for the marks: fixture names and values, the
cases its tests and oracle modules hand the code, its seed inputs.

``recorded_values.py`` compares an expression's value with these, and ``strings.py`` a
string with the fixture names. All are read from the parent's tree (seed inputs from the
head's ledger too), once per package and check.
"""

from __future__ import annotations

import ast
import functools
import json
from collections.abc import Iterator

from oracle_gate.config.ledgers import SEEDS_FILE, parse_seeds
from oracle_gate.errors import GateError
from oracle_gate.globs import matches_any
from oracle_gate.lanes.recorded import Recorded
from oracle_gate.lanes.tamper.reader import parsed
from oracle_gate.model import Package
from oracle_gate.repo.trees import GitTree

__all__ = ["fixture_names", "recorded"]

# A seed input this short (as JSON text) is too common to count as special-casing it.
_MIN_SEED_TEXT = 5
# A fixture holds more values than a seed: its cases' inputs and outputs, two levels
# down; shorter ones ("[0, 1]") are what honest code writes too. Fixture sets this large,
# or files this large (images, archives), are left out.
_FIXTURE_DEPTH = 2
_MIN_FIXTURE_TEXT = 8
# A structured literal a test hands the code or an oracle module holds (an input): long
# enough to be a case and not a piece honest code shares.
_MIN_ORACLE_TEXT = 12
_MAX_FIXTURES = 2000
_MAX_FIXTURE_BYTES = 1 << 16


def _json_text(value: object) -> str | None:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return None


def _literal(node: ast.AST) -> str | None:
    """The JSON text of a literal expression, tuples as lists; None if it is not one."""
    # a negative number is a unary minus on a constant
    if not isinstance(node, (ast.Constant, ast.UnaryOp, ast.List, ast.Tuple, ast.Dict, ast.Set)):
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, (set, frozenset)):
        return None
    return _json_text(value)


def _fixture_files(tree: GitTree, package: Package) -> tuple[str, ...]:
    """The package's fixture files (package-relative)."""
    return _files_matching(tree, package.path, package.matrix.fixture_globs)


# Every changed production file of a package asks again: the tree's files are walked,
# and its fixtures read, once per package.
@functools.lru_cache(maxsize=4)
def _files_matching(tree: GitTree, directory: str, globs: tuple[str, ...]) -> tuple[str, ...]:
    prefix = f"{directory}/" if directory else ""
    return tuple(
        path[len(prefix) :]
        for path in tree.files()
        if path.startswith(prefix) and matches_any(path[len(prefix) :], globs)
    )


def fixture_names(tree: GitTree, package: Package) -> frozenset[str]:
    """Package-relative fixture paths, their file names and top directories."""
    names: set[str] = set()
    for relative in _fixture_files(tree, package):
        names.add(relative)
        base = relative.rsplit("/", 1)[-1]
        if "." in base and len(base) >= 5:
            names.add(base)
        if "/" in relative:
            names.add(relative.split("/", 1)[0] + "/")
    return frozenset(names)


def _fixture_values(tree: GitTree, package: Package) -> frozenset[str]:
    """What the parent's fixtures hold that code could answer from, as JSON text: a JSON
    fixture's lists and dicts down to its cases' inputs and expected outputs
    (``{"input": [...], "expected": [...]}``, or a list of such cases), long enough to
    matter; a text fixture's whole text."""
    return _values_of(tree, tuple(package.join(f) for f in _fixture_files(tree, package)))


@functools.lru_cache(maxsize=4)
def _values_of(tree: GitTree, files: tuple[str, ...]) -> frozenset[str]:
    texts: set[str] = set()
    if len(files) > _MAX_FIXTURES:
        return frozenset()
    for data in tree.read_many(files).values():
        if len(data) > _MAX_FIXTURE_BYTES:
            continue
        try:
            text = data.decode("utf-8")
            document = json.loads(text)
        except UnicodeDecodeError:
            continue
        except ValueError:
            document = text.strip()  # not JSON: the text is the value, with its newlines too
            texts.update(_case_values(text, 0))
        texts.update(_case_values(document, _FIXTURE_DEPTH))
    return frozenset(text for text in texts if len(text) >= _MIN_FIXTURE_TEXT)


def _case_values(value: object, depth: int) -> Iterator[str]:
    """The JSON text of ``value`` when it is a list, a dict or a string, and of what it
    holds, ``depth`` levels down."""
    if isinstance(value, (list, dict, str)):
        text = _json_text(value)
        if text is not None:
            yield text
    if depth > 0 and isinstance(value, (list, dict)):
        for item in value.values() if isinstance(value, dict) else value:
            yield from _case_values(item, depth - 1)


def _oracle_values(tree: GitTree, package: Package) -> frozenset[str]:
    """The cases the parent's tests and oracle modules hand the code, as JSON text: code
    that answers those inputs from memory passes them while broken.

    In a test file, a structured literal passed to a call (``merge_ranges([[0, 2], [2,
    4]])``, a parametrize table) and each case in it; not what a test compares with
    (``== {"timeout": 30, ...}`` is what honest code may define too). In an oracle module
    (partitions, relations), every structured literal: its tables are inputs."""
    modules = sorted({module for row in package.matrix.rows for module in row.oracle_modules})
    # only those the tree holds: the head's matrix may name a module the patch adds
    tests = _files_matching(tree, package.path, package.matrix.tests)
    oracles = _files_matching(tree, package.path, tuple(modules))
    return _written_values(tree, tuple(package.join(f) for f in tests), arguments_only=True) | (
        _written_values(tree, tuple(package.join(f) for f in oracles), arguments_only=False)
    )


@functools.lru_cache(maxsize=8)
def _written_values(tree: GitTree, files: tuple[str, ...], arguments_only: bool) -> frozenset[str]:
    texts: set[str] = set()
    for data in tree.read_many(files).values():
        module = parsed(data) if len(data) <= _MAX_FIXTURE_BYTES else None
        nodes = (_arguments(module) if arguments_only else ast.walk(module)) if module else ()
        for node in nodes:
            text = _literal(node) if _is_structured(node) else None
            texts.update([text] if text and len(text) >= _MIN_ORACLE_TEXT else [])
    return frozenset(texts)


def _arguments(tree: ast.AST) -> Iterator[ast.AST]:
    """Every call's arguments, and what those that are containers hold."""
    for call in ast.walk(tree):
        if isinstance(call, ast.Call):
            for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
                yield argument
                if isinstance(argument, (ast.List, ast.Tuple, ast.Set)):
                    yield from argument.elts


def _is_structured(node: ast.AST) -> bool:
    """A list, tuple or dict that holds another: a case's shape, not an enumeration of
    scalars (status codes, names) that tests and honest code both write."""
    if not isinstance(node, (ast.List, ast.Tuple, ast.Dict)):
        return False
    items = node.values if isinstance(node, ast.Dict) else node.elts
    return any(isinstance(item, (ast.List, ast.Tuple, ast.Dict)) for item in items)


def _seed_texts(parent: GitTree, head: GitTree, package: Package) -> frozenset[str]:
    """Recorded seed inputs (parent and head ledgers) as JSON text, long enough to matter."""
    texts: set[str] = set()
    path = package.join(SEEDS_FILE)
    for tree in (parent, head):
        data = tree.read_optional(path)
        if not data:
            continue
        try:
            seeds = parse_seeds(data, path)
        except GateError:
            continue  # the ledger lane reports a broken ledger
        for seed in seeds:
            text = _json_text(seed.data.get("input"))
            if text is not None and len(text) >= _MIN_SEED_TEXT:
                texts.add(text)
    return frozenset(texts)


@functools.lru_cache(maxsize=4)
def recorded(parent: GitTree, head: GitTree, package: Package) -> Recorded:
    """The package's recorded values, once per check (their digests are built on first
    need): test values, then fixture values, then seed inputs, the last kind winning."""
    entries = [(text, "test value") for text in sorted(_oracle_values(parent, package))]
    entries += [(text, "fixture value") for text in sorted(_fixture_values(parent, package))]
    entries += [(text, "seed input") for text in sorted(_seed_texts(parent, head, package))]
    return Recorded(entries)
