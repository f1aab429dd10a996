"""The package graph: which directories declare a matrix, and who depends on whom.

Nodes are directories: every Bazel package (a directory with a BUILD file, gate
or not, so dependencies through ungated packages still count) and every
package that declares a matrix. An edge A -> B means A depends on B. Edges come
from (1) labels in BUILD files, read statically (``bazel/buildfile.py``), (2) ``deps``
in invariants.yaml and in ``oracle_gate(...)``, and (3) ``bazel query`` when the
``bazel`` graph is asked for.

Everything else asks ``PackageGraph``; its edges are plain dicts of sets.
"""

from __future__ import annotations

import ast
import bisect
import copy
import dataclasses
import functools
import itertools
import logging
import posixpath
import re
from collections import defaultdict, deque
from collections.abc import (
    Callable,
    Container,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    Set,
)
from dataclasses import dataclass, field
from typing import TypeVar, overload

from oracle_gate.bazel import limits, starlark
from oracle_gate.bazel.bazelrc import RcFlags, rc_flags
from oracle_gate.bazel.buildfile import (
    GATE_FUNCTION,
    BuildFile,
    Call,
    Dep,
    parse_build,
    parse_build_cached,
    strings_of,
)
from oracle_gate.bazel.bzl import BzlFile, scan_bzl
from oracle_gate.bazel.glob import package_files, starting_with
from oracle_gate.bazel.labels import BUILD_NAMES, WORKSPACE_MARKERS, label_ref, parse_label
from oracle_gate.bazel.query import BAZEL_TIMEOUT_SECONDS, bazel_query_edges, bazel_workspace
from oracle_gate.bazel.starlark import Evaluated
from oracle_gate.config.matrix import (
    MATRIX_FILE,
    gate_matrix,
    native_gate_deps,
    native_gate_matrix,
    parse_matrix,
)
from oracle_gate.errors import ConfigError, TreeError
from oracle_gate.frozen import quick_init
from oracle_gate.model import Change, ChangeKind, Matrix, Package
from oracle_gate.repo.trees import MAX_LINK_HOPS, GitTree, Tree, link_end

__all__ = [
    "GRAPH_MODES",
    "PackageGraph",
    "derive_graph",
    "load_graph",
    "load_packages",
]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

GRAPH_MODES = ("static", "bazel")
# Files whose bytes (not only their presence) the graph is built from.
BAZELIGNORE = ".bazelignore"
_GRAPH_INPUTS = frozenset({*BUILD_NAMES, *WORKSPACE_MARKERS, MATRIX_FILE, BAZELIGNORE})
# The names ``_scan`` looks for among a tree's files.
_SCANNED_NAMES = (*BUILD_NAMES, *WORKSPACE_MARKERS, MATRIX_FILE, ".bzl")


def _graph_input(path: str) -> bool:
    """Whether the graph reads ``path``'s bytes: a ``.bzl`` file's labels and macros count,
    and a ``.bazelrc``'s ``--deleted_packages`` and ``--package_path``."""
    name = posixpath.basename(path)
    return name in _GRAPH_INPUTS or name.endswith(".bzl") or ".bazelrc" in name


def _gates_of(read: BuildFile | Evaluated) -> BuildFile | None:
    """The gate calls the static reader read, or the native core's (converted on first use)."""
    return read if isinstance(read, BuildFile) else read.gates


@quick_init
@dataclass(frozen=True)
class _GateSource:
    """Everything a Bazel gate's matrix is computed from, kept to recompute it cheaply."""

    read: BuildFile | Evaluated  # the static reader's reading, or the native core's
    path: str  # the BUILD file
    package: str  # the Bazel package name, workspace-relative
    workspace: str
    blob: str  # the BUILD file's blob id ("" when unknown: a working tree)
    owned: tuple[str, ...]  # the package's files, package-relative, sorted
    # The matrix the native core built for exactly these files (``Evaluated.native_matrix``),
    # or None: ``gate_matrix`` builds it from ``build``.
    native_matrix: object | None = None

    @property
    def build(self) -> BuildFile:
        found = _gates_of(self.read)
        assert found is not None, "a gate source always has its gate calls"
        return found

    def package_object(self, directory: str) -> Package:
        key = (self.blob, directory, self.workspace, self.owned)
        found = _GATES.get(key) if self.blob else None
        if found is None:
            found = _gate_package(self, directory)
            if self.blob:
                if len(_GATES) > _GATES_LIMIT:
                    _GATES.clear()
                _GATES[key] = found
        return found


@dataclass
class _Scan:
    """What one tree declares, before it becomes a graph."""

    packages: _Packages = field(default_factory=lambda: _Packages())
    nodes: set[str] = field(default_factory=set)
    # Reverse adjacency: target -> {source: why}, the first declaration of an edge kept.
    dependents: dict[str, dict[str, str]] = field(default_factory=dict)
    loads: dict[str, set[str]] = field(default_factory=dict)
    workspace_of: dict[str, str] = field(default_factory=dict)
    gates: dict[str, _GateSource] = field(default_factory=dict)
    # A BUILD file or matrix that is a symlink: its content can change with no
    # diff entry of its own, so a head graph may not be derived from this one.
    linked: bool = False
    # The loads of BUILD files the static reader read (not evaluated): .bzl -> loaders.
    read_loads: dict[str, set[str]] = field(default_factory=dict)
    # Where edges over-approximate what the reader could not evaluate:
    # (the BUILD or .bzl file, why), for the report.
    approximate: set[tuple[str, str]] = field(default_factory=set)
    # The directories .bazelignore hides (``_bazel_ignored``).
    ignored: tuple[str, ...] = ()
    # The root of each repository the main one names (``_Repositories.named``).
    repositories: dict[str, str] = field(default_factory=dict)
    # The packages that may configure every rule (``_add_toolchains``) -> why.
    toolchains: dict[str, str] = field(default_factory=dict)

    def add_edge(self, source: str, target: str, why: str) -> None:
        """``source`` depends on ``target`` because of ``why``, unless it already did."""
        if source != target:
            self.dependents.setdefault(target, {}).setdefault(source, why)


def _read(tree: Tree, paths: list[str]) -> dict[str, bytes]:
    if isinstance(tree, GitTree):
        return tree.read_many(paths)
    return {path: tree.read(path) for path in paths}


class _Reads:
    """Reads files of one tree, each once: the evaluator and the static reader share them."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.read: dict[str, bytes] = {}

    def __call__(self, paths: list[str]) -> Mapping[str, bytes]:
        """Every file read so far: ``paths`` among them."""
        if not self.read:  # a monorepo's first batch is tens of thousands of BUILD files
            self.read = _read(self.tree, paths)
            return self.read
        missing = [path for path in paths if path not in self.read]
        self.read.update(_read(self.tree, missing) if missing else {})
        return self.read


def _join(workspace: str, path: str) -> str:
    return posixpath.join(workspace, path) if workspace and path else workspace or path


def _enclosing(directory: str, directories: Container[str]) -> str | None:
    """The nearest of ``directories`` at or above ``directory`` ("" is the root), else None.

    ``directory`` is repository-relative, as git lists paths: no leading, trailing or
    doubled '/', so its parent is what comes before its last '/'.
    """
    while directory not in directories:
        if not directory:
            return None
        directory = directory.rpartition("/")[0]
    return directory


def _bazel_ignored(tree: Tree, files: tuple[str, ...]) -> tuple[str, ...]:
    """Directories ``.bazelignore`` at the root hides from Bazel, each ending in '/'.

    As Bazel 4.2.3 reads each line: a path, normalised (``lib/gen/``, ``./lib/gen``,
    ``lib//gen`` all hide ``lib/gen``) but never trimmed (`` lib/gen`` hides a directory
    whose name starts with a space), and an absolute one hides nothing.
    """
    if BAZELIGNORE not in files:
        return ()
    lines = _LINE_END.split(tree.read(BAZELIGNORE).decode("utf-8", "surrogateescape"))
    found = (_ignored_directory(line) for line in lines)
    return tuple(f"{directory}/" for directory in found if directory is not None)


def _ignored_directory(line: str) -> str | None:
    if not line or line.startswith(("#", "/")):
        return None
    directory = posixpath.normpath(line)
    # "." would hide the whole tree and "../x" lies outside it: hiding less than Bazel
    # might keeps packages it does not see, so the graph selects more, never less.
    return None if directory == "." or directory.split("/")[0] == ".." else directory


# Java's line reading, which Bazel's uses: \n, \r and \r\n end a line.
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class _BuildFileRepository:
    """A ``new_local_repository``: a directory of the tree whose BUILD file is given apart,
    as a label (``build_file``) or inline (``build_file_content``). Or a repository fetched
    from outside the tree (``http_archive``) whose declaration names files of the tree
    (``build_file``, ``patches``): the node ``@<name>``, which those files change."""

    root: str
    declared_in: str  # the WORKSPACE file
    build_file: str | None
    content: str | None
    # The labels of the declaration's other arguments (a fetched repository's ``patches``).
    inputs: tuple[str, ...] = ()
    fetched: bool = False


@dataclass(frozen=True)
class _Repositories:
    """Where Bazel repositories start in the tree, and the names each calls itself."""

    roots: frozenset[str]
    names: Mapping[str, frozenset[str]]  # root -> its own names (``workspace(name = ...)``)
    # The names the main repository gives the others in the tree (``local_repository(name,
    # path)``), and its own names, each with its root: ``@vendored//lib`` from any of them.
    named: Mapping[str, str] = field(default_factory=dict)
    built: tuple[_BuildFileRepository, ...] = ()
    # The root WORKSPACE's ``bind(name, actual)`` calls: ``//external:name`` is ``actual``.
    binds: tuple[tuple[str, str], ...] = ()
    # The target patterns the root's ``register_toolchains`` and
    # ``register_execution_platforms`` name, each with why ("WORKSPACE registers").
    registered: tuple[tuple[str, str], ...] = ()
    # What the main repositories' WORKSPACE or MODULE.bazel load: (label, the root).
    loads: tuple[tuple[str, str], ...] = ()
    # Why a repository name this reader does not know may still lie in the tree ("" when
    # the root WORKSPACE declares every repository of the tree plainly).
    unknown: str = ""
    # The main repositories' roots ("" unless the tree's root holds no WORKSPACE).
    mains: frozenset[str] = frozenset({""})

    def root_of(self, repo: str | None, workspace: str) -> str | None:
        """The root of the repository a label of ``workspace`` names, or None: one not in
        the tree. ``repo`` is the name written after ``@`` ("" in ``@//``: the main
        repository), None for a label without one (``workspace``'s own)."""
        if repo is None or repo in self.names[workspace]:
            return workspace
        return self.named.get(repo) if repo else ""


def _repositories(tree: Tree, markers: Mapping[str, list[str]]) -> _Repositories:
    """The root repository, and each directory the root declares a separate repository.

    As for Bazel, a nested directory with a ``WORKSPACE`` (or ``MODULE.bazel``)
    is a repository of its own only when the root names it in
    ``local_repository(path = ...)`` or ``local_path_override(path = ...)``
    (a ``.bazelignore``d one the root does not name holds no package at all);
    otherwise its BUILD files are packages of the main repository like any other. A tree
    whose root holds no ``WORKSPACE`` has a main repository at each outermost directory
    that does (``ws/``, where the Bazel workspace of a larger checkout starts): ``//lib``
    there is ``ws/lib``.
    """
    mains = {""} if "" in markers or not markers else _outermost(markers)
    through_links = _LinkFollower(tree)
    local: dict[str, set[str]] = {}  # path -> the names the root gives it
    names: dict[str, frozenset[str]] = {}
    built: list[_BuildFileRepository] = []
    mapped: list[tuple[str, str]] = []  # (a name in a repository, the name it stands for)
    binds: list[tuple[str, str]] = []
    registered: list[tuple[str, str]] = []
    loads: list[tuple[str, str]] = []
    fetched: list[tuple[set[str], _BuildFileRepository]] = []
    unknown = ""
    for root in sorted(markers):
        own: set[str] = set()
        texts = {path: tree.read(path) for path in markers[root]}
        reads = {path: parse_build(text, path) for path, text in texts.items()}
        renamed = _renamed_modules(read.calls for read in reads.values())
        for path, read in reads.items():
            text = texts[path]
            if root in mains:
                unknown = unknown or _hidden_repositories(text, read, path)
                loads += ((label, root) for label, _ in read.loads)
            for call in read.calls:
                own |= _strings(call, _NAME_KEYS.get(call.function, ()))
                if root in mains and call.function in _LOCAL_REPOSITORY_CALLS:
                    paths = _strings(call, ("path",))
                    for where in (through_links(posixpath.join(root, p)) for p in paths):
                        given = _apparent_names(call, renamed)
                        found = _built(call, path, where, given)
                        built.extend([found] if found else [])
                        local.setdefault(found.root if found else where, set()).update(given)
                    mapped += _repo_mapping(call)
                elif root in mains and call.function not in _NOT_REPOSITORY_CALLS:
                    fetched += _fetched(call, path, renamed)
                if root in mains and call.function in _REGISTER_CALLS:
                    registered += (
                        (pattern, f"{path} registers") for pattern in _positional_strings(call)
                    )
                if root == "" and call.function == "bind":
                    binds += itertools.product(
                        _strings(call, ("name",)), _strings(call, ("actual",))
                    )
        names[root] = frozenset(own)
    # A build_file repository needs no WORKSPACE of its own: Bazel writes one.
    roots = frozenset(mains | {root for root in markers if root in local})
    roots |= {repository.root for repository in built}
    named = {name: root for root in sorted(roots - mains) for name in local.get(root, ())}
    # A repository over the whole tree (``path = "."``) is the main one's files again.
    for main in sorted(mains):
        named.update(dict.fromkeys(names.get(main, frozenset()) | local.get(main, set()), main))
    # ``repo_mapping = {"@dep": "@w"}``: inside that repository @dep is @w. Taken for the
    # whole tree, which gives an edge wherever Bazel has it (and maybe more).
    for alias, target in mapped:
        known = target == "" or target in named  # "@" is the main repository
        if alias and known:
            named.setdefault(alias, named.get(target, ""))
    for given, repository in fetched:
        if given.isdisjoint(named):
            built.append(repository)
            roots |= {repository.root}
            named.update(dict.fromkeys(given, repository.root))
    return _Repositories(
        mains=frozenset(mains),
        roots=roots,
        names={root: names.get(root, frozenset()) for root in roots},
        named=named,
        built=tuple(built),
        binds=tuple(binds),
        registered=tuple(registered),
        loads=tuple(loads),
        unknown=unknown,
    )


class _LinkFollower:
    """A repository's ``path`` as a directory of the tree ("" for the root, ``.``), the
    tree's symbolic links on the way followed, as Bazel follows them (``path = "vlink"``
    with ``vlink -> third_party/v`` is ``third_party/v``)."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree if isinstance(tree, GitTree) else None
        self.links = self.tree.links() if self.tree else frozenset()

    def __call__(self, path: str) -> str:
        current = _tree_path(path)
        for _hop in range(MAX_LINK_HOPS):
            parts = current.split("/")
            linked = next(
                (n for n in range(1, len(parts) + 1) if "/".join(parts[:n]) in self.links), None
            )
            if linked is None:
                return current
            assert self.tree is not None  # only a git tree lists links
            end = _link_end("/".join(parts[:linked]), self.tree.link_targets())
            if end is None:  # out of the tree, or a loop: as written
                return current
            current = _tree_path(posixpath.join(end, *parts[linked:]))
        return current


def _outermost(directories: Iterable[str]) -> set[str]:
    """The ``directories`` no other of them lies above."""
    listed = set(directories)
    return {d for d in listed if _enclosing(posixpath.dirname(d), listed) is None}


def _tree_path(path: str) -> str:
    """A repository's ``path`` as a directory of the tree ("" for the root, ``.``)."""
    normal = posixpath.normpath(path)
    return "" if normal == "." else normal


# Starlark that can declare repositories this reader does not see: in a loop, a
# comprehension or a function of the WORKSPACE itself.
_HIDING_NODES = (ast.For, ast.FunctionDef, ast.Lambda, ast.comprehension)


def _hidden_repositories(text: bytes, read: BuildFile, path: str) -> str:
    """Why the root WORKSPACE ``path`` may declare a repository of the tree that this
    reader cannot name, "" if it cannot: a load of the tree's own ``.bzl`` code (a macro
    or a repository rule), a loop or function, a repository ``path`` not written out
    or absolute (``__workspace_dir__ + "/vendor"``)."""
    for label, _ in read.loads:
        if label.startswith(("//", ":", "@//")):
            return f"{path} loads {label}, the tree's own code"
    for call in read.calls:
        if call.function in _LOCAL_REPOSITORY_CALLS and call.get("path") is not None:
            where = call.get("path")
            if not isinstance(where, str) or where.startswith("/"):
                return f"{path}:{call.line} gives {call.function} a path not read here"
    try:
        nodes = ast.walk(ast.parse(text))
    except (SyntaxError, ValueError):
        return f"{path} is not read here"
    if any(isinstance(node, _HIDING_NODES) for node in nodes):
        return f"{path} declares in a loop or function"
    return ""


def _repo_mapping(call: Call) -> list[tuple[str, str]]:
    """A repository rule's ``repo_mapping``, as (name, the name it stands for) pairs."""
    mapping = call.get("repo_mapping")
    if not isinstance(mapping, dict):
        return []
    return [
        (alias.lstrip("@"), target.lstrip("@"))
        for alias, target in mapping.items()
        if isinstance(target, str)
    ]


def _renamed_modules(calls: Iterable[Iterable[Call]]) -> dict[str, str]:
    """Module name -> the name the main repository knows it by, where ``bazel_dep`` gives
    one (``repo_name = "com_foo"``)."""
    return {
        module: repo_name
        for call in itertools.chain.from_iterable(calls)
        if call.function == "bazel_dep"
        for module in _strings(call, ("name",))
        for repo_name in _strings(call, ("repo_name",))
    }


def _apparent_names(call: Call, renamed: Mapping[str, str]) -> set[str]:
    """The names labels of the main repository give the repository ``call`` declares: an
    override's module by its ``bazel_dep``'s ``repo_name``."""
    modules = _strings(call, ("module_name",))
    return _strings(call, ("name",)) | {renamed.get(module, module) for module in modules}


def _fetched(
    call: Call, declared_in: str, renamed: Mapping[str, str]
) -> list[tuple[set[str], _BuildFileRepository]]:
    """The repository a call that fetches one declares (``http_archive``, a
    ``single_version_override``), if its arguments name labels, which may be the tree's
    files (``patches``, ``build_file``): Bazel fetches it again when one changes."""
    given = _apparent_names(call, renamed)
    build_file, content = call.get("build_file"), call.get("build_file_content")
    inputs = tuple(
        text
        for key, value in call.kwargs
        if key not in ("name", "module_name", "build_file_content")
        for text in strings_of(value)
        if label_ref(text) is not None
    )
    if not given or not (inputs or isinstance(content, str)):
        return []
    repository = _BuildFileRepository(
        root=f"@{min(given)}",
        declared_in=declared_in,
        build_file=build_file if isinstance(build_file, str) else None,
        content=content if isinstance(content, str) else None,
        inputs=inputs,
        fetched=True,
    )
    return [(given, repository)]


def _built(call: Call, declared_in: str, root: str, names: set[str]) -> _BuildFileRepository | None:
    """The repository of a ``new_local_repository`` call, or None: another call.

    One whose ``path`` lies outside the tree is the node ``@<name>``: no patch
    changes its files, but its BUILD file (from the tree, or inline) may name the
    tree's packages (``@//lib:l``), and what uses the repository then depends on them.
    """
    if call.function != "new_local_repository":
        return None
    if _outside_tree(root):
        if not names:
            return None
        root = f"@{min(names)}"
    build_file, content = call.get("build_file"), call.get("build_file_content")
    return _BuildFileRepository(
        root=root,
        declared_in=declared_in,
        build_file=build_file if isinstance(build_file, str) else None,
        content=content if isinstance(content, str) else None,
    )


# Calls of WORKSPACE and MODULE.bazel files that name their own repository.
_NAME_KEYS = {"workspace": ("name",), "module": ("name", "repo_name")}


# The package Bazel gives the root WORKSPACE's ``bind()`` targets.
_EXTERNAL = "external"
# Calls of a root WORKSPACE or MODULE.bazel that make packages' toolchains or platforms
# candidates for every rule of the build.
_REGISTER_CALLS = frozenset({"register_toolchains", "register_execution_platforms"})
_REGISTERS = re.compile(rb"\bregister_(?:toolchains|execution_platforms)\b")
_LOCAL_REPOSITORY_CALLS = frozenset(
    {"local_repository", "new_local_repository", "local_path_override"}
)
# Calls of a root WORKSPACE or MODULE.bazel that fetch no repository of their own.
_NOT_REPOSITORY_CALLS = frozenset(
    {"workspace", "module", "bind", "load", "bazel_dep", "use_extension", "use_repo"}
    | _REGISTER_CALLS
)


def _strings(call: Call, keys: Iterable[str]) -> set[str]:
    return {value for key in keys if isinstance(value := call.get(key), str) and value}


def _positional_strings(call: Call) -> list[str]:
    """The strings of ``call``'s positional arguments, lists included."""
    found: list[str] = []
    for item in call.args:
        items = item if isinstance(item, tuple) else (item,)
        found += (value for value in items if isinstance(value, str))
    return found


def _drop_ignored(
    builds: dict[str, str], ignored: tuple[str, ...], repositories: _Repositories
) -> None:
    """Bazel does not see a package of the main repository that ``.bazelignore`` hides;
    another repository of the tree (``local_repository``) keeps its packages, since the
    main repository's ``.bazelignore`` does not apply there."""
    for directory, path in list(builds.items()):
        if path.startswith(ignored):
            root = _enclosing(directory, repositories.roots)
            if root is None or root in repositories.mains:
                del builds[directory]


def _drop_linked_away(tree: GitTree, builds: dict[str, str]) -> None:
    """As Bazel does, a BUILD file that is a link to a directory or to nothing is none:
    ``BUILD`` is read in place of such a ``BUILD.bazel``, and without one the directory
    is no package. (A link out of the tree, or round in a loop, stays an error.)"""
    for link in sorted(tree.links()):
        directory, _, name = link.rpartition("/")
        if builds.get(directory) != link or tree.leads_to(link) == "file":
            continue
        del builds[directory]
        other = _join(directory, BUILD_NAMES[1])
        if name != BUILD_NAMES[0] or tree.blob_id(other) is None:
            continue
        if not tree.is_link(other) or tree.leads_to(other) == "file":
            builds[directory] = other


def _scan(tree: Tree) -> _Scan:
    files = tree.files()
    builds: dict[str, str] = {}
    markers: dict[str, list[str]] = {}
    matrix_files: list[str] = []
    ignored = _bazel_ignored(tree, files)
    bzl_files: list[str] = []
    # A C-level suffix test first: the names below end a few thousandths of the paths.
    for path in [path for path in files if path.endswith(_SCANNED_NAMES)]:
        directory, _, name = path.rpartition("/")
        if name.endswith(".bzl"):
            bzl_files.append(path)
        elif name in BUILD_NAMES:
            # BUILD sorts before BUILD.bazel; Bazel reads BUILD.bazel when both exist.
            if name == BUILD_NAMES[0] or directory not in builds:
                builds[directory] = path
        elif name in WORKSPACE_MARKERS:
            markers.setdefault(directory, []).append(path)
        elif name == MATRIX_FILE:
            matrix_files.append(path)
    if isinstance(tree, GitTree):
        _drop_linked_away(tree, builds)
    blob_ids = tree.blob_ids(builds.values()) if isinstance(tree, GitTree) else {}
    repositories = _repositories(tree, markers)
    if ignored:
        _drop_ignored(builds, ignored, repositories)
    workspace_of = (
        dict.fromkeys(builds, "")  # one repository, as most trees are
        if repositories.roots == {""}
        else {d: _enclosing(d, repositories.roots) or "" for d in builds}
    )
    linked: set[str] = set()
    read_builds = _Reads(tree)
    # A name that is not UTF-8 (git's bytes, decoded with surrogates) cannot reach the
    # native core: it sees the others, the static reader reads such a BUILD file, and a
    # gate with such a file below it is built by gate_matrix, which sees them all.
    not_utf8 = frozenset(p for p in [p for p in files if not p.isascii()] if not _is_utf8(p))
    scan = _Scan(nodes=set(builds), ignored=ignored, repositories=dict(repositories.named))
    build_dirs = frozenset(builds)
    sorted_dirs = sorted(build_dirs)
    evaluated, gate_files, computed = _evaluate(
        scan,
        tree,
        read_builds,
        files,
        bzl_files,
        not_utf8,
        builds,
        workspace_of,
        repositories,
        linked,
    )
    _add_computed(scan, computed, sorted_dirs)
    flags = rc_flags(lambda path: tree.read(path) if _listed(files, path) else None)
    _add_rc_flags(scan, flags, build_dirs, sorted_dirs)
    _add_binds(scan, repositories)
    registered = [
        *repositories.registered,
        *((pattern, ".bazelrc names") for pattern in sorted(flags.registered)),
        *_registered_by_loaded_code(scan, read_builds, files, repositories, build_dirs),
    ]
    _add_toolchains(scan, registered, repositories, sorted_dirs)
    # The static reader reads what was not evaluated, and every gate's matrix
    # (an evaluated file without its other rule calls: the evaluation has their edges).
    read_whole = {p for p in builds.values() if p not in evaluated or evaluated[p].error}
    # The native core reads a plainly written gate call itself (``Evaluated.native_gates``).
    read_gates = {
        p: evaluated[p] for p in gate_files - read_whole if evaluated[p].native_gates is not None
    }
    wanted = read_whole | (gate_files - read_gates.keys())
    parsed = parse_build_cached(
        [(path, blob_ids.get(path)) for path in builds.values() if path in wanted],
        read_builds,
        linked,
        {path: evaluated[path].rule_lines for path in wanted - read_whole},
    )
    scan.linked = bool(linked)
    scan.workspace_of = workspace_of
    for directory, path in builds.items():
        workspace = workspace_of[directory]
        package = directory[len(workspace) + 1 :] if workspace else directory
        outcome = evaluated.get(path)
        if outcome is not None and not outcome.error:
            for loaded in outcome.loads:
                scan.loads.setdefault(loaded, set()).add(directory)
        else:
            _add_read(
                scan, parsed[path], directory, path, package, workspace, repositories, sorted_dirs
            )
            if outcome is not None:
                _add_rejected(scan, directory, path, bzl_files, sorted_dirs, outcome.error)
        read = read_gates.get(path) or parsed.get(path)
        native = read if isinstance(read, Evaluated) else None
        below = f"{directory}/" if directory else ""
        if not_utf8 and any(path.startswith(below) for path in not_utf8):
            native = None  # the core did not see every file of the package
        native_matrix = native and native.native_matrix
        if read is not None and (native_matrix is not None or _has_gate(read)):
            owned = native and native.owned
            if owned is None:
                owned = tuple(package_files(files, directory, build_dirs, sorted_dirs))
            blob = blob_ids.get(path) or ""
            source = _GateSource(read, path, package, workspace, blob, owned, native_matrix)
            scan.gates[directory] = source
            lazy = native_matrix is not None
            scan.packages.add(directory, source if lazy else source.package_object(directory))
    # A build_file may load the tree's .bzl files too: its loads are read before theirs.
    _add_built(scan, tree, files, repositories, sorted_dirs)
    _add_bzl_labels(scan, tree, bzl_files, repositories, sorted_dirs)
    if isinstance(tree, GitTree):
        _add_links(scan, tree.link_targets(), files, sorted_dirs)
    contents = _read(tree, matrix_files)
    scan.linked |= isinstance(tree, GitTree) and any(tree.is_link(p) for p in matrix_files)
    for path in matrix_files:
        directory = posixpath.dirname(path)
        if directory in scan.packages:
            other = scan.packages[directory].matrix_file
            raise ConfigError(
                f"the package declares its matrix twice, here and in {other}; keep one", path
            )
        matrix = parse_matrix(contents[path], path)
        scan.packages.add(directory, Package(path=directory, matrix=matrix))
        scan.nodes.add(directory)
    return scan


def _add_built(
    scan: _Scan,
    tree: Tree,
    files: tuple[str, ...],
    repositories: _Repositories,
    sorted_dirs: list[str],
) -> None:
    """Each ``new_local_repository`` of the tree as one node: its directory's files are
    its sources, what its BUILD file names are its edges, and a change of that BUILD file
    (or of the WORKSPACE that holds it inline) changes it. So does a change of a file of
    the tree a fetched repository's declaration names (its ``patches``)."""
    for repository in repositories.built:
        root = repository.root
        scan.nodes.add(root)
        scan.workspace_of.setdefault(root, root)
        for label in repository.inputs:
            read = _loaded_path(label, "", "", repositories)
            if read is not None and _listed(files, read):
                scan.loads.setdefault(read, set()).add(root)
        written = repository.build_file
        path = written and _loaded_path(written, "", "", repositories)
        in_tree = path is not None and _listed(files, path)
        if repository.fetched and not in_tree and repository.content is None:
            continue  # its BUILD files are the archive's own, or another repository's
        if path is not None and in_tree:
            text, source = tree.read(path), path
        elif written is None and repository.content is not None:
            text, source = repository.content.encode(), repository.declared_in
        else:
            # A BUILD file from outside the tree: its labels are unknown here.
            why = f"{repository.declared_in} gives {root} a BUILD file not in the tree"
            why += ": it may name every package"
            scan.approximate.add((repository.declared_in, why))
            for target in _label_targets("", True, "", sorted_dirs):
                scan.add_edge(root, target, why)
            continue
        scan.loads.setdefault(source, set()).add(root)
        build = parse_build(text, source)
        _add_read(scan, build, root, source, "", root, repositories, sorted_dirs)


def _listed(ordered: Sequence[str], path: str) -> bool:
    """Whether the sorted ``ordered`` holds ``path``."""
    index = bisect.bisect_left(ordered, path)
    return index < len(ordered) and ordered[index] == path


def _add_links(
    scan: _Scan, links: Mapping[str, str], files: tuple[str, ...], sorted_dirs: list[str]
) -> None:
    """Bazel follows symbolic links, git lists them as files: with ``libs/alias -> real``,
    ``//libs/alias`` is a copy of ``libs/real``, and a link to a file puts that file in
    the link's package. So the package holding a link depends on every package the link
    leads into, and a package named under a linked directory on its original."""
    if not links:
        return
    build_dirs = frozenset(sorted_dirs)
    named = sorted(scan.nodes | scan.dependents.keys())
    for link in links:
        target = _link_end(link, links)
        if target is None:
            continue  # outside the repository, or a loop: no change of ours reaches it
        scan.linked = True
        why = f"{link} is a symbolic link to {target}"
        is_dir = bool(starting_with(files, f"{target}/"))
        reached = _enclosing(target if is_dir else posixpath.dirname(target), build_dirs)
        inside = [reached] if reached is not None else []
        if is_dir:
            inside += _at_or_under(target, sorted_dirs)
        holder = _enclosing(posixpath.dirname(link), build_dirs)
        if holder is not None:
            if reached is None:
                outside = target if is_dir else posixpath.dirname(target)
                inside.append(_outside_node(scan, outside, holder))
            for package in inside:
                scan.add_edge(holder, package, why)
        _read_through(scan, link, target)
        if is_dir:
            for node in _at_or_under(link, named):
                original = _enclosing(target + node[len(link) :], build_dirs)
                if original is not None:
                    scan.add_edge(node, original, why)


def _add_binds(scan: _Scan, repositories: _Repositories) -> None:
    """``//external:x`` names what ``bind(name = "x", actual = ...)`` in the root WORKSPACE
    binds: the package ``external`` stands for every bound package of the tree."""
    for name, actual in repositories.binds:
        try:
            label = parse_label(actual, "")
        except ValueError:
            continue  # Bazel refuses the WORKSPACE
        root = repositories.root_of(label.repo if actual.startswith("@") else None, "")
        if root is not None:
            scan.nodes.add(_EXTERNAL)
            target = _join(root, label.package)
            scan.add_edge(_EXTERNAL, target, f"WORKSPACE binds //{_EXTERNAL}:{name} to {actual}")


def _add_toolchains(
    scan: _Scan,
    registered: list[tuple[str, str]],
    repositories: _Repositories,
    sorted_dirs: list[str],
) -> None:
    """The packages of the tree a target pattern of ``registered`` ((pattern, who names
    it): the root's ``register_toolchains`` and ``register_execution_platforms``, the
    ``.bazelrc``'s flags) names (``//tc:all``, ``//tc/...``): toolchain resolution, a
    platform, an aspect or a Starlark flag may hand any rule of the build what they
    declare, an edge ``bazel query`` does not show."""
    for pattern, who in registered:
        repo, slashes, rest = pattern.partition("//")
        if not slashes:
            continue  # Bazel refuses a pattern that is no absolute label
        root = repositories.root_of(repo.lstrip("@") if repo else None, "")
        if root is None:
            continue  # another repository, not in the tree
        package = rest.partition(":")[0]
        if package == "..." or package.endswith("/..."):
            under = _join(root, package[:-3].rstrip("/"))
            found = _at_or_under(under, sorted_dirs) if under else sorted_dirs
        else:
            found = [_join(root, package)] if _listed(sorted_dirs, _join(root, package)) else []
        for directory in found:
            scan.toolchains.setdefault(directory, f"{who} {pattern}")


def _registered_by_loaded_code(
    scan: _Scan,
    read: _Reads,
    files: tuple[str, ...],
    repositories: _Repositories,
    build_dirs: Set[str],
) -> list[tuple[str, str]]:
    """(pattern, who) for the tree's own ``.bzl`` code the root WORKSPACE loads, through
    the files it loads in turn: a file that calls ``register_toolchains`` or
    ``register_execution_platforms`` may register any label it names (which of them
    the calls are given is not read here), so each one counts, and the graph says so."""
    level = [(label, "", root) for label, root in repositories.loads]
    seen: dict[str, str] = {}  # each .bzl file reached -> its repository's root
    found: list[tuple[str, str]] = []
    while level:
        reached: dict[str, str] = {}
        for label, package, root in level:
            path = _loaded_path(label, package, root, repositories)
            if path is not None and path not in seen and _listed(files, path):
                reached[path] = seen[path] = root
        texts = read(list(reached)) if reached else {}
        level = []
        for path, root in reached.items():
            bzl = scan_bzl(texts[path])
            home = _enclosing(posixpath.dirname(path), build_dirs) or root
            package = home[len(root) + 1 :] if root else home
            level += ((loaded, package, root) for loaded in bzl.loads)
            if _REGISTERS.search(texts[path]) and bzl.labels:
                loaded_by = f"{path}, which the root WORKSPACE loads,"
                found += ((written, f"{loaded_by} may register") for written, _ in bzl.labels)
                why = "registers toolchains or platforms: every package it names is taken as one"
                scan.approximate.add((path, f"{loaded_by} {why}"))
    return found


def _add_rc_flags(
    scan: _Scan, flags: RcFlags, build_dirs: Set[str], sorted_dirs: list[str]
) -> None:
    """What the root ``.bazelrc`` says of packages (``bazel/bazelrc.py``). A package it
    deletes is a directory of the package around it, whose globs then see its files: that
    package depends on it. A package ``p`` a ``--package_path`` root holds (``root/p``) may
    be what Bazel reads as ``//p``: ``p`` depends on it. Either way the package reads the
    rc files as it reads its BUILD file."""
    moved: list[tuple[str, str, str]] = []
    for directory in sorted(flags.deleted_packages & build_dirs):
        holder = _enclosing(posixpath.dirname(directory), build_dirs) if directory else None
        if holder is not None:
            moved.append((holder, directory, f".bazelrc deletes the package {directory}"))
    for root in sorted(flags.package_roots):
        for directory in starting_with(sorted_dirs, f"{root}/"):
            package = directory[len(root) + 1 :]
            why = f".bazelrc's --package_path may read //{package} from {root}"
            moved.append((_outside_node(scan, package, directory), directory, why))
    for holder, directory, why in moved:
        scan.add_edge(holder, directory, why)
        for path in flags.files:
            scan.loads.setdefault(path, set()).add(holder)


def _outside_node(scan: _Scan, directory: str, holder: str) -> str:
    """A node for the files a link in ``holder`` leads to outside every Bazel package
    (``lib/f.txt -> ../data/f.txt``): Bazel sees them in ``holder``, so an edit of them
    (which need not touch the link) ripples from this node, as from a package's files."""
    scan.nodes.add(directory)
    scan.workspace_of.setdefault(directory, scan.workspace_of.get(holder, ""))
    return directory


def _read_through(scan: _Scan, link: str, target: str) -> None:
    """Who loads a ``.bzl`` file (or reads a ``build_file``) through ``link`` reads its
    target too: an edit of the target changes what they load."""
    for alias in [path for path in scan.loads if path == link or path.startswith(f"{link}/")]:
        real = target + alias[len(link) :]
        scan.loads.setdefault(real, set()).update(scan.loads[alias])


def _link_end(link: str, links: Mapping[str, str]) -> str | None:
    """Where the symbolic link ``link`` leads, through links to links (as Bazel follows
    them), or None: out of the repository, or round a loop."""
    try:
        end, _ = link_end(link, lambda path: "link" if path in links else "", links.__getitem__)
    except TreeError:
        return None
    return end


def _outside_tree(path: str) -> bool:
    """Whether a normalized ``path`` leaves the repository (absolute, or up from its root)."""
    return posixpath.isabs(path) or path == ".." or path.startswith("../")


def _at_or_under(directory: str, ordered: list[str]) -> list[str]:
    """The paths of ``ordered`` (sorted) that are ``directory`` or lie below it."""
    below = list(starting_with(ordered, f"{directory}/"))
    return [directory, *below] if _listed(ordered, directory) else below


def _is_utf8(path: str) -> bool:
    try:
        path.encode()
    except UnicodeEncodeError:
        return False
    return True


def _has_gate(read: BuildFile | Evaluated) -> bool:
    gates = _gates_of(read)
    return gates is not None and bool(gates.gates)


def _add_bzl_labels(
    scan: _Scan,
    tree: Tree,
    bzl_files: list[str],
    repositories: _Repositories,
    sorted_dirs: list[str],
) -> None:
    """Every package that loads a ``.bzl`` file, directly or through others, depends on
    every label that file names (``bazel/bzl.py`` says why), and is one of its loaders."""
    present = set(bzl_files)
    scanned: dict[str, BzlFile] = {}
    loads: dict[str, set[str]] = {}  # .bzl -> the .bzl files it loads
    pending = sorted(path for path in scan.read_loads if path in present)
    while pending:
        contents = _read(tree, pending)
        found: set[str] = set()
        for path in pending:
            # Not parsed here, but run by the native evaluator, which would not parse it.
            deep = limits.nesting_problem(contents[path].decode("utf-8", "replace"))
            if deep is not None:
                raise ConfigError(deep.message(".bzl file"), path, deep.line)
            scanned[path] = bzl = scan_bzl(contents[path])
            workspace = _enclosing(posixpath.dirname(path), repositories.roots) or ""
            package = _bzl_package(path, workspace, sorted_dirs)
            for text in bzl.loads:
                relative_to = "" if text.startswith(("//", "@")) else package
                loaded = _loaded_path(text, relative_to, workspace, repositories)
                if loaded is not None:
                    loads.setdefault(path, set()).add(loaded)
            found |= loads.get(path, set())
        pending = sorted((found & present) - set(scanned))
    for start in sorted(set(scan.read_loads) & present):
        loaders = scan.read_loads[start]
        for path in _reachable(start, loads):
            if path != start:
                scan.loads.setdefault(path, set()).update(loaders)
                scan.read_loads.setdefault(path, set()).update(loaders)
    for path in sorted(scanned):
        _bzl_edges(scan, path, scanned[path], repositories, sorted_dirs)


def _reachable(start: str, loads: Mapping[str, set[str]]) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for path in loads.get(stack.pop(), ()):
            if path not in seen:
                seen.add(path)
                stack.append(path)
    return seen


def _bzl_package(path: str, workspace: str, sorted_dirs: list[str]) -> str:
    """The workspace-relative package holding the ``.bzl`` file at ``path``."""
    directory = _enclosing(posixpath.dirname(path), frozenset(sorted_dirs)) or workspace
    return directory[len(workspace) + 1 :] if workspace else directory


def _bzl_edges(
    scan: _Scan, path: str, bzl: BzlFile, repositories: _Repositories, sorted_dirs: list[str]
) -> None:
    workspace = _enclosing(posixpath.dirname(path), repositories.roots) or ""
    loaders = sorted(scan.read_loads.get(path, ()))
    # A Label() is a label of the .bzl file's repository, a plain string one of the
    # repository of the BUILD file that runs the macro: both are taken. So is every
    # repository the file names, as `Label("@v//:x").relative("//z:y")` is `@v//z:y`.
    spaces = {workspace, *(scan.workspace_of.get(loader, "") for loader in loaders)}
    spaces |= {
        root
        for text, ref in bzl.labels
        if text.startswith("@") and (root := repositories.root_of(ref.repo, workspace)) is not None
    }
    if bzl.repository_pieces:  # "@" + repo + "//lib:l": of any repository
        spaces |= repositories.roots
    deps = [
        (root, Dep(ref.package, text, 0, ref.repo, ref.prefix))
        for text, ref in bzl.labels
        for root in {repositories.root_of(_written_repo(text, ref.repo), space) for space in spaces}
        if root is not None
    ]
    if bzl.local:  # Label(":x"), attr.label(default = ":x"): the .bzl file's own package
        package = _bzl_package(path, workspace, sorted_dirs)
        deps.append((workspace, Dep(package, f"//{package}:...", 0)))
    if not deps:
        return
    scan.approximate.add(
        (
            path,
            f"{path} is loaded by {len(loaders)} BUILD file(s), which are taken to depend on "
            "every label it names",
        )
    )
    for root, dep in deps:
        why = f"over-approximation: {path} names {dep.label}"
        for target in _label_targets(dep.package, dep.prefix, root, sorted_dirs):
            for loader in loaders:
                scan.add_edge(loader, target, why)


_GATE_CALL = re.compile(rb"\b%s\s*\(|=\s*[\"']%s[\"']" % ((GATE_FUNCTION.encode(),) * 2))


def _evaluate(
    scan: _Scan,
    tree: Tree,
    read_builds: Callable[[list[str]], Mapping[str, bytes]],
    files: tuple[str, ...],
    bzl_files: list[str],
    not_utf8: frozenset[str],
    builds: Mapping[str, str],
    workspace_of: Mapping[str, str],
    repositories: _Repositories,
    linked: set[str],
) -> tuple[dict[str, Evaluated], set[str], list[tuple[str, str, str, str]]]:
    """BUILD files evaluated by the native core, by path, those that may declare a gate,
    and the computed labels they name: (BUILD path, package prefix, why, repository root).

    The other edges the core found are added to ``scan``. Empty under the pure-Python
    backend: the static reader reads every file then. Paths in ``not_utf8`` never
    reach the core (no ``load()`` can name one).
    """
    if not starlark.available():
        return {}, set(), []
    if isinstance(tree, GitTree):
        linked |= {p for p in tree.links() if builds.get(posixpath.dirname(p)) == p}
    seen = [path for path in files if path not in not_utf8] if not_utf8 else list(files)
    paths = [path for path in builds.values() if path not in not_utf8]
    contents = read_builds(paths)
    bzl_paths = [path for path in bzl_files if path not in not_utf8]
    inputs = []
    for directory, path in builds.items():
        if path not in not_utf8:
            workspace = workspace_of[directory]
            package = directory[len(workspace) + 1 :] if workspace else directory
            inputs.append((path, package, workspace, contents[path]))
    names = repositories.names.items()
    evaluation = starlark.evaluate_build_files(
        inputs,
        _read(tree, bzl_paths),
        {root: sorted(n) for root, n in names if _is_utf8(root)},
        seen,
        {name: root for name, root in repositories.named.items() if _is_utf8(root)},
        repositories.unknown,
        # A link whose name is not UTF-8 is not among the files the core sees either.
        [p for p in tree.links() if p not in not_utf8] if isinstance(tree, GitTree) else (),
        [p for p in scan.ignored if _is_utf8(p)],
    )
    assert not scan.dependents, "the evaluator's edges come first: nothing may be replaced"
    scan.dependents = evaluation.dependents
    scan.approximate.update(evaluation.approximate)
    evaluated = dict(zip(paths, evaluation.outcomes, strict=True))
    for outcome in evaluated.values():
        # Not a file for the static reader: the code the patch added would hold Bazel
        # too, or builds more than any BUILD file may (bazel/limits.py).
        stopped = limits.stopped_error(outcome.error)
        if stopped is not None:
            raise stopped
    # The static reader builds a gate's matrix: files that call oracle_gate (or a name a
    # load() binds to it). Merely loading it, as every BUILD file of a monorepo may, is not one.
    # Where the native core read the gate calls, it says so; a search decides elsewhere.
    gates = {
        path
        for path, outcome in evaluated.items()
        if outcome.declares_gate
        or (outcome.native_gates is None and _GATE_CALL.search(contents[path]))
    }
    computed = [
        (paths[index], package, why, root) for index, package, why, root in evaluation.computed
    ]
    return evaluated, gates, computed


def _add_computed(
    scan: _Scan, computed: list[tuple[str, str, str, str]], sorted_dirs: list[str]
) -> None:
    """The edges of computed labels (``"//libs/%s" % n``): to every package under the
    prefix, in the repository (root) the label names."""
    for path, package, why, root in computed:
        directory = path.rpartition("/")[0]
        for target in _label_targets(package, True, root, sorted_dirs):
            scan.add_edge(directory, target, why)


def _add_read(
    scan: _Scan,
    build: BuildFile,
    directory: str,
    path: str,
    package: str,
    workspace: str,
    repositories: _Repositories,
    sorted_dirs: list[str],
) -> None:
    """Edges of a BUILD file the static reader read: its labels, and its loads."""
    for dep in (*build.deps, *build.named_repo_deps):
        root = repositories.root_of(_written_repo(dep.label, dep.repo), workspace)
        why = f"{path}:{dep.line} names {dep.label}"
        if root is None:
            _add_unknown_repository(scan, repositories, directory, path, why, sorted_dirs)
            continue
        if dep.prefix:
            why += f", a computed label: every package under //{dep.package}"
            scan.approximate.add((path, why))
        for target in _label_targets(dep.package, dep.prefix, root, sorted_dirs):
            scan.add_edge(directory, target, why)
    _add_loads(scan, build, directory, package, workspace, repositories)


def _add_unknown_repository(
    scan: _Scan,
    repositories: _Repositories,
    directory: str,
    path: str,
    why: str,
    sorted_dirs: list[str],
) -> None:
    """A label of a repository this reader does not know: outside the tree, unless the
    root WORKSPACE may hide one in it; then it may name any package."""
    if repositories.unknown:
        why = f"{why}, a repository {repositories.unknown} may declare: every package"
        scan.approximate.add((path, why))
        for target in sorted_dirs:
            scan.add_edge(directory, target, why)


def _label_targets(package: str, prefix: bool, workspace: str, sorted_dirs: list[str]) -> list[str]:
    """The directories a label of ``package`` can name: one, or, for a computed label's
    ``prefix``, every package under it."""
    target = _join(workspace, package) if package else workspace
    if workspace.startswith("@"):  # a repository outside the tree is one node
        return [workspace]
    if not prefix:
        return [target]
    # A bare "//" prefix under a nested workspace starts at the workspace's root.
    start = f"{workspace}/" if workspace and not package else target
    return list(starting_with(sorted_dirs, start)) or [target.rstrip("/")]


def _written_repo(text: str, repo: str) -> str | None:
    """The repository name a label ``text`` writes (``repo``, as parsed), None if none."""
    return repo if text.startswith("@") else None


@functools.lru_cache(maxsize=65536)
def _loaded_file(text: str, package: str) -> tuple[str | None, str] | None:
    """The repository written (``_written_repo``) and the repository-relative .bzl file a
    ``load()`` label names, or None (invalid)."""
    try:
        label = parse_label(text, package)
    except ValueError:
        return None
    return _written_repo(text, label.repo), posixpath.join(label.package, label.name)


def _loaded_path(
    text: str, package: str, workspace: str, repositories: _Repositories
) -> str | None:
    """The path in the tree of the .bzl file ``text`` names in ``workspace``'s ``package``,
    or None: invalid, or in a repository not in the tree."""
    loaded = _loaded_file(text, package)
    root = None if loaded is None else repositories.root_of(loaded[0], workspace)
    return None if loaded is None or root is None else _join(root, loaded[1])


def _add_rejected(
    scan: _Scan,
    directory: str,
    path: str,
    bzl_files: list[str],
    sorted_dirs: list[str],
    error: str,
) -> None:
    """A BUILD file the evaluator rejected (``error`` says why) that loads the tree's own
    ``.bzl`` code: the static reader sees only the labels that code writes out, never
    those it builds (``"/" + "/lib:l"``, ``"@" + "main//lib:l"``), so the package depends
    on every package of the tree, whatever repository it is in."""
    loaded = {bzl for bzl, loaders in scan.read_loads.items() if directory in loaders}
    if loaded.isdisjoint(bzl_files):
        return
    why = f"{path} loads the tree's own .bzl code, and the evaluator could not run it"
    scan.approximate.add((path, f"{why} ({error}): taken to depend on every package"))
    for target in _label_targets("", True, "", sorted_dirs):
        scan.add_edge(directory, target, why)


def _add_loads(
    scan: _Scan,
    build: BuildFile,
    directory: str,
    package: str,
    workspace: str,
    repositories: _Repositories,
) -> None:
    for text, _symbols in build.loads:
        # An absolute label means the same file from every package: one cache entry.
        relative_to = "" if text.startswith(("//", "@")) else package
        loaded = _loaded_path(text, relative_to, workspace, repositories)
        if loaded is not None:
            scan.loads.setdefault(loaded, set()).add(directory)
            scan.read_loads.setdefault(loaded, set()).add(directory)


class _Packages(Mapping[str, Package]):
    """Packages by directory, where a gate the native core read plainly right is built
    on first look: a cold ``select`` needs the rows of the gates it selects only, and
    building every gate's rows was a fifth of its time. Such a gate cannot fail to
    build (the core found its matrix right), so no error waits for the first look.
    """

    def __init__(self, entries: Mapping[str, Package | _GateSource] | None = None) -> None:
        self._entries: dict[str, Package | _GateSource] = dict(entries or {})

    def __getitem__(self, directory: str) -> Package:
        found = self._entries[directory]
        if isinstance(found, _GateSource):
            found = self._entries[directory] = found.package_object(directory)
        return found

    @overload
    def get(self, directory: str, /) -> Package | None: ...
    @overload
    def get(self, directory: str, /, default: Package | _T) -> Package | _T: ...
    def get(self, directory: str, /, default: object = None) -> object:
        # Mapping's own get pays for a KeyError on each directory that is not a package.
        return self[directory] if directory in self._entries else default

    def __contains__(self, directory: object) -> bool:
        return directory in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> KeysView[str]:
        return self._entries.keys()

    def add(self, directory: str, found: Package | _GateSource) -> None:
        self._entries[directory] = found

    def copy(self) -> _Packages:
        return _Packages(self._entries)

    def declared_deps(self) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """Each package's directory, matrix file and ``deps``, building no gate."""
        for directory, found in self._entries.items():
            if isinstance(found, _GateSource):
                yield (
                    directory,
                    posixpath.basename(found.path),
                    native_gate_deps(found.native_matrix),
                )
            else:
                yield directory, found.matrix_file, found.matrix.deps


# Gate matrices by (BUILD blob id, directory, workspace, the package's files):
# everything a matrix depends on, so a hit is exact. Cleared with the parse cache's size.
_GATES: dict[tuple[str, str, str, tuple[str, ...]], Package] = {}
_GATES_LIMIT = 200_000


def _gate_package(source: _GateSource, directory: str) -> Package:
    path, package, workspace = source.path, source.package, source.workspace
    if source.native_matrix is not None:
        matrix, name = native_gate_matrix(source.native_matrix)
    else:
        matrix, name = gate_matrix(source.build, path, package, workspace, lambda: source.owned)
    # A nested workspace's gate cannot be named from the root workspace's `bazel test`.
    target = f"//{package}:{name}" if not workspace else None
    return Package(
        path=directory, matrix=matrix, matrix_file=posixpath.basename(path), target=target
    )


def load_packages(tree: Tree) -> Mapping[str, Package]:
    """Every package of ``tree`` (invariants.yaml or a BUILD gate), keyed by its directory.

    Raises:
        ConfigError: a matrix file or a BUILD file is invalid.
        TreeError: a matrix or BUILD file cannot be read.
    """
    return _scan(tree).packages


def load_graph(
    tree: Tree,
    mode: str = "static",
    timeout: float = BAZEL_TIMEOUT_SECONDS,
    former: frozenset[str] = frozenset(),
) -> PackageGraph:
    """The package graph of ``tree``.

    Args:
        tree: the commit (or working tree) to read.
        mode: ``static`` reads BUILD files without Bazel; ``bazel`` takes the
            target edges of the root workspace from ``bazel query`` instead,
            which needs ``bazel`` on PATH and the working tree checked out, clean,
            at ``tree``'s commit.
        timeout: seconds ``bazel query`` may take.
        former: the parent's package directories, when ``tree`` is a head: a
            ``deps`` entry naming one the patch removed is still an edge (the
            matrix lane rejects the removal), not an error.

    Raises:
        ConfigError: a matrix or BUILD file is invalid, or a ``deps`` entry
            names no package (nor a former one).
        GateError: ``bazel`` mode cannot run (no bazel, no workspace, a dirty
            checkout, a failed query).
    """
    if mode not in GRAPH_MODES:
        raise ConfigError(f"unknown graph {mode!r}; expected one of {', '.join(GRAPH_MODES)}")
    scan = _scan(tree)
    approximate = scan.approximate
    if mode == "bazel":
        workspace = bazel_workspace(tree)
        # Bazel answers inside the root workspace; an edge into or out of another
        # repository of the tree (``@vendored//lib``) keeps its static reading.
        static = scan.dependents
        scan.dependents = {}
        for target, found in static.items():
            for source, why in found.items():
                if scan.workspace_of.get(source) or scan.workspace_of.get(target):
                    scan.add_edge(source, target, why)
        for source, target, why in bazel_query_edges(workspace, timeout):
            scan.add_edge(source, target, why)
        nested = {root for root in scan.workspace_of.values() if root}
        approximate = {
            (path, why) for path, why in approximate if _enclosing(posixpath.dirname(path), nested)
        }
    return PackageGraph(
        scan.packages,
        nodes=scan.nodes,
        dependents=scan.dependents,
        loads=scan.loads,
        derivable=mode == "static" and isinstance(tree, GitTree) and not scan.linked,
        gate_sources=scan.gates,
        bazel_packages=scan.workspace_of,
        approximate=tuple(why for _, why in sorted(approximate)),
        former=former,
        ignored=scan.ignored,
        repositories=scan.repositories,
        toolchains=scan.toolchains,
    )


def derive_graph(
    parent: PackageGraph, head: Tree, changes: Iterable[Change], mode: str = "static"
) -> PackageGraph:
    """The graph of ``head``, derived from ``parent``'s when the diff allows it.

    A graph depends only on which paths exist and on the bytes of BUILD files,
    ``.bzl`` files, matrix files and workspace markers. When no change touches one of those:
    if every change modifies a file in place (the common patch), ``parent`` is
    returned as it is; if paths appeared or disappeared, nodes and edges stay
    and only the gates whose ``glob()`` sees those paths are recomputed. Any
    other diff (an edited BUILD file, a symlinked one, a symbolic link) reads ``head``
    anew; so does any diff of a tree that holds a symbolic link.

    Raises:
        ConfigError, GateError: as ``load_graph``.
    """
    changes = list(changes)
    paths = [path for change in changes for path in (change.path, change.old_path) if path]
    # A symbolic link the diff adds or edits may be one Bazel follows (``_add_links``).
    linked = isinstance(head, GitTree) and any(head.is_link(path) for path in paths)
    # A file some BUILD reads as a whole (a new_local_repository's build_file) is an input.
    read = any(parent.loaders(path) for path in paths)
    if mode != "static" or not parent.derivable or linked or read or any(map(_graph_input, paths)):
        return load_graph(head, mode, former=frozenset(parent.packages))
    if all(change.kind is ChangeKind.MODIFIED for change in changes):
        return parent
    return parent._with_paths_moved(
        added={c.path for c in changes if c.kind in (ChangeKind.ADDED, ChangeKind.RENAMED)},
        removed={
            c.old_path or c.path
            for c in changes
            if c.kind in (ChangeKind.DELETED, ChangeKind.RENAMED)
        },
    )


def _resolve_dep(directory: str, dep: str) -> str:
    """A deps entry (``../codec``, ``//libs/codec``, ``//libs/codec:gate``) of the package
    in ``directory``, as a directory."""
    if dep.startswith("//"):
        return dep[2:].split(":", 1)[0].strip("/")
    joined = posixpath.normpath(posixpath.join(directory or ".", dep))
    return "" if joined == "." else joined


class PackageGraph:
    """Directories as nodes; an edge A -> B means A depends on B.

    ``packages`` holds the directories that declare a matrix; other nodes are
    Bazel packages without a gate, and directories named by a label but absent
    from the tree (a package the patch deleted that something still names).
    """

    def __init__(
        self,
        packages: Mapping[str, Package],
        *,
        nodes: Iterable[str] = (),
        dependents: Mapping[str, Mapping[str, str]] | None = None,
        loads: Mapping[str, Iterable[str]] | None = None,
        derivable: bool = False,
        gate_sources: Mapping[str, _GateSource] | None = None,
        bazel_packages: Iterable[str] = (),
        approximate: tuple[str, ...] = (),
        former: frozenset[str] = frozenset(),
        ignored: tuple[str, ...] = (),
        repositories: Mapping[str, str] | None = None,
        toolchains: Mapping[str, str] | None = None,
    ) -> None:
        self.packages = packages.copy() if isinstance(packages, _Packages) else _Packages(packages)
        # Why some edges over-approximate (a computed label, a loaded .bzl file's labels).
        self.approximate = approximate
        # Built statically from a commit with no symlinked BUILD or matrix file:
        # ``derive_graph`` may hand this very graph to a head the diff leaves alone.
        self.derivable = derivable
        self._owners = frozenset(nodes) | frozenset(self.packages)
        # Reverse adjacency with the declaration of each edge: node -> {each node that
        # depends on it directly: why}. Dicts, not a graph library: importing one costs a
        # fresh process ~0.3 s. The caller's dicts are never changed: a ``deps`` edge
        # goes into a copy.
        self._dependents_of: dict[str, Mapping[str, str]] = dict(dependents or {})
        for directory, matrix_file, deps in self.packages.declared_deps():
            declared_in = posixpath.join(directory, matrix_file)
            for dep in deps:
                target = _resolve_dep(directory, dep)
                known = target in self.packages or target in former
                if not known or target.startswith(".."):
                    raise ConfigError(
                        f"deps entry {dep!r} names no package (resolved to {target!r})",
                        declared_in,
                    )
                found = self._dependents_of.get(target, {})
                if target != directory and directory not in found:
                    why = f"{declared_in} deps {dep}"
                    self._dependents_of[target] = {**found, directory: why}
        self._nodes = {
            *self._owners,
            *self._dependents_of,
            *itertools.chain.from_iterable(self._dependents_of.values()),
        }
        self._loads = {path: frozenset(users) for path, users in (loads or {}).items()}
        self._gate_sources = dict(gate_sources or {})
        self._bazel_dirs = frozenset(bazel_packages)
        # The directories .bazelignore hides, each ending in '/'.
        self.ignored = ignored
        # The root of each repository of the tree, by every name the main one gives it.
        self.repositories = dict(repositories or {})
        # The packages that may configure every rule (``_add_toolchains``: registered
        # toolchains and platforms, labels the .bazelrc's flags name) -> why.
        self.toolchains = dict(toolchains or {})

    def _with_paths_moved(self, added: set[str], removed: set[str]) -> PackageGraph:
        """This graph for a tree where ``added`` paths appeared and ``removed`` ones went.

        Nodes and edges do not depend on those paths (none is a BUILD, matrix or
        workspace file); a Bazel gate's matrix may, through ``glob()``.
        """
        moved: dict[str, set[str]] = {}
        for path in added | removed:
            directory = _enclosing(posixpath.dirname(path), self._bazel_dirs) or ""
            if directory in self._gate_sources:
                moved.setdefault(directory, set()).add(path)
        derived = copy.copy(self)
        derived.packages = self.packages.copy()
        derived._gate_sources = dict(self._gate_sources)
        for directory, paths in moved.items():
            source = self._gate_sources[directory]
            prefix = f"{directory}/" if directory else ""
            owned = set(source.owned)
            owned -= {path[len(prefix) :] for path in paths & removed}
            owned |= {path[len(prefix) :] for path in paths & added}
            # The native core's matrix was for the old files: gate_matrix builds it anew.
            source = dataclasses.replace(source, owned=tuple(sorted(owned)), native_matrix=None)
            derived._gate_sources[directory] = source
            derived.packages.add(directory, source.package_object(directory))
        return derived

    def package_of(self, path: str) -> Package | None:
        """The nearest package enclosing the repo-relative ``path``, if any."""
        directory = _enclosing(posixpath.dirname(path), self.packages)
        return None if directory is None else self.packages[directory]

    def matrix_declared_by(self, path: str) -> Matrix | None:
        """The matrix ``path`` declares (invariants.yaml, or oracle_gate() in BUILD), if any."""
        package = self.packages.get(posixpath.dirname(path))
        if package is None or package.join(package.matrix_file) != path:
            return None
        return package.matrix

    def node_of(self, path: str) -> str | None:
        """The nearest node (Bazel package or matrix package) enclosing ``path``, if any."""
        return _enclosing(posixpath.dirname(path), self._owners)

    def bazel_package_of(self, path: str) -> str | None:
        """The Bazel package (a directory with a BUILD file) holding ``path``, if any."""
        return _enclosing(posixpath.dirname(path), self._bazel_dirs)

    def bazel_owner(self, path: str) -> str | None:
        """The Bazel package whose globs can see ``path``: ``bazel_package_of``, or None
        under a directory .bazelignore hides."""
        if self.ignored and path.startswith(self.ignored):
            return None
        return self.bazel_package_of(path)

    def enclosing_package(self, node: str) -> Package | None:
        """The nearest package declaring a matrix at or above directory ``node``."""
        directory = _enclosing(node, self.packages)
        return None if directory is None else self.packages[directory]

    def has_node(self, node: str) -> bool:
        """Whether ``node`` is in the graph (present, or named by a label)."""
        return node in self._nodes

    def dependents(self, packages: Iterable[str]) -> set[str]:
        """Every node that transitively depends on one of ``packages``."""
        found: set[str] = set()
        for package in packages:
            found |= self._ancestors(package)
        return found

    def dependencies(self, package: str) -> tuple[str, ...]:
        """Every node ``package`` depends on, transitively, in sorted order."""
        return tuple(sorted(self._reachable(package, self._dependencies_of)))

    @functools.cached_property
    def _dependencies_of(self) -> dict[str, set[str]]:
        """Adjacency: node -> the nodes it depends on directly (few commands ask)."""
        dependencies: defaultdict[str, set[str]] = defaultdict(set)
        for dependency, found in self._dependents_of.items():
            for dependent in found:
                dependencies[dependent].add(dependency)
        return dict(dependencies)

    def _ancestors(self, node: str) -> set[str]:
        """Every node with a path of one or more edges to ``node``, ``node`` left out."""
        return self._reachable(node, self._dependents_of)

    @staticmethod
    def _reachable(node: str, adjacency: Mapping[str, Iterable[str]]) -> set[str]:
        """Every node one or more steps from ``node`` in ``adjacency``, ``node`` left out."""
        seen: set[str] = set()
        stack = [node]
        while stack:
            for dependent in adjacency.get(stack.pop(), ()):
                if dependent not in seen:
                    seen.add(dependent)
                    stack.append(dependent)
        seen.discard(node)
        return seen

    def dependency_chains(self, sources: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """For each node that depends on one of ``sources`` through at least one edge: a
        shortest chain to it.

        The chain starts at the dependent and ends at the source it depends on
        (``(c, b, a)``: c depends on b, which depends on a). A source is in the
        result only when it depends on a source itself: another one, or itself
        around a cycle (``dependents`` leaves that one
        out). Ties are broken by sorted order, so the same graph always explains
        itself the same way.
        """
        chains: dict[str, tuple[str, ...]] = {}
        queue: deque[tuple[str, tuple[str, ...]]] = deque(
            (node, (node,)) for node in sorted(set(sources)) if node in self._nodes
        )
        while queue:
            node, chain = queue.popleft()
            for dependent in sorted(self._dependents_of.get(node, ())):
                if dependent not in chains:
                    chains[dependent] = (dependent, *chain)
                    queue.append((dependent, chains[dependent]))
        return chains

    def why(self, dependent: str, dependency: str) -> str:
        """The declaration that makes ``dependent`` depend on ``dependency`` directly."""
        return self._dependents_of.get(dependency, {}).get(dependent, "")

    def loaders(self, path: str) -> frozenset[str]:
        """The nodes whose BUILD file ``load()``s the .bzl file at ``path``."""
        return self._loads.get(path, frozenset())

    def nodes(self) -> frozenset[str]:
        """Every node: Bazel packages, matrix packages and directories labels name."""
        return frozenset(self._nodes)

    def nodes_at_or_under(self, directory: str) -> list[str]:
        """The nodes at or below ``directory`` (every node for the root, ""), sorted."""
        ordered = sorted(self._nodes)
        return ordered if not directory else _at_or_under(directory, ordered)

    def resolve(self, name: str) -> Package:
        """The package at repo-relative directory ``name`` (``.`` is the root).

        Raises:
            ConfigError: no package is declared there.
        """
        key = posixpath.normpath(name.strip("/"))
        key = "" if key == "." else key
        if key not in self.packages:
            raise ConfigError(
                f"not a package: no {MATRIX_FILE} or oracle_gate() in this directory", name
            )
        return self.packages[key]
