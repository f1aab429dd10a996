"""The repositories of a tree: where each starts, the names the main one gives them, and
the repositories a WORKSPACE or MODULE.bazel declares over the tree's own files."""

from __future__ import annotations

import ast
import functools
import itertools
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from oracle_gate.bazel.labels import label_ref, parse_label
from oracle_gate.bazel.read import BuildFile, Call, parse_build, strings_of
from oracle_gate.bazel.read.parse import syntax_tree
from oracle_gate.bazel.workspace.links import LinkFollower
from oracle_gate.errors import ConfigError
from oracle_gate.repo.directories import enclosing, joined, outermost, outside_tree
from oracle_gate.repo.trees import Tree

__all__ = [
    "BuildFileRepository",
    "Repositories",
    "drop_ignored",
    "loaded_path",
    "read_repositories",
    "written_repo",
]


@dataclass(frozen=True)
class BuildFileRepository:
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
class Repositories:
    """Where Bazel repositories start in the tree, and the names each calls itself."""

    roots: frozenset[str]
    names: Mapping[str, frozenset[str]]  # root -> its own names (``workspace(name = ...)``)
    # The names the main repository gives the others in the tree (``local_repository(name,
    # path)``), and its own names, each with its root: ``@vendored//lib`` from any of them.
    named: Mapping[str, str] = field(default_factory=dict)
    built: tuple[BuildFileRepository, ...] = ()
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


def read_repositories(tree: Tree, markers: Mapping[str, list[str]]) -> Repositories:
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
    mains = {""} if "" in markers or not markers else outermost(markers)
    through_links = LinkFollower(tree)
    local: dict[str, set[str]] = {}  # path -> the names the root gives it
    names: dict[str, frozenset[str]] = {}
    built: list[BuildFileRepository] = []
    mapped: list[tuple[str, str]] = []  # (a name in a repository, the name it stands for)
    binds: list[tuple[str, str]] = []
    registered: list[tuple[str, str]] = []
    loads: list[tuple[str, str]] = []
    fetched: list[tuple[set[str], BuildFileRepository]] = []
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
    return Repositories(
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
        nodes = ast.walk(syntax_tree(text, path))  # as the BUILD reader reads it
    except ConfigError:
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
) -> list[tuple[set[str], BuildFileRepository]]:
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
    repository = BuildFileRepository(
        root=f"@{min(given)}",
        declared_in=declared_in,
        build_file=build_file if isinstance(build_file, str) else None,
        content=content if isinstance(content, str) else None,
        inputs=inputs,
        fetched=True,
    )
    return [(given, repository)]


def _built(call: Call, declared_in: str, root: str, names: set[str]) -> BuildFileRepository | None:
    """The repository of a ``new_local_repository`` call, or None: another call.

    One whose ``path`` lies outside the tree is the node ``@<name>``: no patch
    changes its files, but its BUILD file (from the tree, or inline) may name the
    tree's packages (``@//lib:l``), and what uses the repository then depends on them.
    """
    if call.function != "new_local_repository":
        return None
    if outside_tree(root):
        if not names:
            return None
        root = f"@{min(names)}"
    build_file, content = call.get("build_file"), call.get("build_file_content")
    return BuildFileRepository(
        root=root,
        declared_in=declared_in,
        build_file=build_file if isinstance(build_file, str) else None,
        content=content if isinstance(content, str) else None,
    )


# Calls of WORKSPACE and MODULE.bazel files that name their own repository.
_NAME_KEYS = {"workspace": ("name",), "module": ("name", "repo_name")}


# Calls of a root WORKSPACE or MODULE.bazel that make packages' toolchains or platforms
# candidates for every rule of the build.
_REGISTER_CALLS = frozenset({"register_toolchains", "register_execution_platforms"})


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


def drop_ignored(
    builds: dict[str, str], ignored: tuple[str, ...], repositories: Repositories
) -> None:
    """Bazel does not see a package of the main repository that ``.bazelignore`` hides;
    another repository of the tree (``local_repository``) keeps its packages, since the
    main repository's ``.bazelignore`` does not apply there."""
    for directory, path in list(builds.items()):
        if path.startswith(ignored):
            root = enclosing(directory, repositories.roots)
            if root is None or root in repositories.mains:
                del builds[directory]


def written_repo(text: str, repo: str) -> str | None:
    """The repository name a label ``text`` writes (``repo``, as parsed), None if none."""
    return repo if text.startswith("@") else None


@functools.lru_cache(maxsize=65536)
def _loaded_file(text: str, package: str) -> tuple[str | None, str] | None:
    """The repository written (``written_repo``) and the repository-relative .bzl file a
    ``load()`` label names, or None (invalid)."""
    try:
        label = parse_label(text, package)
    except ValueError:
        return None
    return written_repo(text, label.repo), posixpath.join(label.package, label.name)


def loaded_path(text: str, package: str, workspace: str, repositories: Repositories) -> str | None:
    """The path in the tree of the .bzl file ``text`` names in ``workspace``'s ``package``,
    or None: invalid, or in a repository not in the tree."""
    loaded = _loaded_file(text, package)
    root = None if loaded is None else repositories.root_of(loaded[0], workspace)
    return None if loaded is None or root is None else joined(root, loaded[1])
