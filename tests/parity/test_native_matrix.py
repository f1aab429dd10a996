"""The native core builds a gate's matrix only when ``gate_matrix`` would build the same.

``rust/src/starlark/matrix.rs`` accepts a subset of the gates ``config/matrix.py``
accepts, so a cold graph skips the Python check for them; every other gate, and
so every mistake, still goes to ``gate_matrix``, whose message is the one users
see. These tests hold the native matrix to the Python one on good gates, and show
that bad ones never come back with a matrix but fail with the same message and
line whichever backend reads the tree.
"""

from __future__ import annotations

import os
from types import ModuleType

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from backends import _native, needs_native
from gitrepo import GitRepo
from oracle_gate import backend
from oracle_gate.bazel import starlark
from oracle_gate.bazel.glob import package_files
from oracle_gate.bazel.read import parse_build
from oracle_gate.config.matrix import gate_matrix, native_gate_matrix
from oracle_gate.errors import ConfigError
from oracle_gate.graph import load_graph
from oracle_gate.model import Matrix
from oracle_gate.repo.trees import GitTree

HEADER = 'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n'
PATH = "a/BUILD.bazel"
# The package's files, package-relative: what glob() and the ledgers' presence see.
FILES = (
    "BUILD.bazel",
    "p.py",
    "seeds.jsonl",
    "src/a.py",
    "src/b.py",
    "testdata/c.json",
    "testdata/d/e.json",
    "tests/sub/test_c.py",
    "tests/test_a.py",
    "tests/test_b.py",
)


def _core() -> ModuleType:
    assert _native is not None
    return _native


def _natively(text: str, files: tuple[str, ...], workspace: str = "") -> tuple[Matrix, str] | None:
    """The matrix the native core built for package ``a``, or None (left to gate_matrix)."""
    tree_files = sorted(f"{workspace}/a/{f}" if workspace else f"a/{f}" for f in files)
    [(_, error, _, _, _, found)] = _core().evaluate_build_files(
        [(f"{workspace}/{PATH}" if workspace else PATH, "a", workspace, text.encode())],
        [],
        [(workspace, [])],
        tree_files,
    )[3]
    assert error == ""
    return None if found is None else native_gate_matrix(found)


def _in_python(text: str, files: tuple[str, ...], workspace: str = "") -> object:
    """``gate_matrix``'s matrix and name, or its error as the user sees it."""
    try:
        return gate_matrix(parse_build(text.encode(), PATH), PATH, "a", workspace, lambda: files)
    except ConfigError as error:
        return str(error)


GOOD = {
    "the bench's gate": """oracle_gate(
    name = "oracle_gate",
    rows = [
        invariant(id = "contract", globs = ["src/*.py"],
                  budget = {"examples": 20}),
        invariant(id = "first_module", globs = ["src/mod_0.py"]),
    ],
    tests = glob(["tests/test_*.py"]),
    fixtures = glob(["testdata/**"]),
    owners = ["@team-3"],
    deps = [
        "//libs/b:oracle_gate",
        "//libs/c",
        ":sibling",
    ],
)
""",
    "every row field, ledgers and a visibility": """oracle_gate(
    name = "g",
    rows = [invariant(
        id = "r.1-x",
        globs = ["src/", "**/*.py"],
        properties = ["p.py:prop_a"],
        partitions = ["m/q.py:_Part"],
        relations = [],
        fixtures = ["testdata/**/*.json"],
        budget = {"examples": 5, "seconds": 3},
    )],
    tests = ["tests/test_a.py"] + glob(["tests/**/test_*.py"], exclude = ["tests/test_b.py"]),
    fixtures = None,
    lock = "oracle_gate.lock",
    seeds = "seeds.jsonl",
    visibility = ["//visibility:public"],
)
""",
    "no rows at all": 'oracle_gate(name = "empty")\n',
    "a glob that matches nothing": 'oracle_gate(name = "g", tests = glob(["none/*.py"]))\n',
}


@needs_native
@pytest.mark.parametrize("name", sorted(GOOD))
def test_a_plainly_right_gate_gets_the_matrix_gate_matrix_builds(name: str) -> None:
    text = HEADER + GOOD[name]
    found = _natively(text, FILES)
    assert found is not None, "the native core left a plainly right gate to Python"
    assert found == _in_python(text, FILES)


@needs_native
def test_a_gate_in_a_nested_workspace_resolves_its_deps_there() -> None:
    text = HEADER + GOOD["the bench's gate"]
    found = _natively(text, FILES, workspace="nested")
    assert found is not None
    assert found[0].deps == (
        "//nested/libs/b:oracle_gate",
        "//nested/libs/c:c",
        "//nested/a:sibling",
    )
    assert found == _in_python(text, FILES, workspace="nested")


# A mistake per line: each replaces a piece of the bench's gate.
BAD = {
    "no name": ('name = "oracle_gate",', ""),
    "an empty name": ('name = "oracle_gate"', 'name = ""'),
    "a number as name": ('name = "oracle_gate"', "name = 7"),
    "owners not a list": ('owners = ["@team-3"]', 'owners = "@team-3"'),
    "an owner not a string": ('owners = ["@team-3"]', 'owners = ["@team-3", 3]'),
    "an absolute test path": ('glob(["tests/test_*.py"])', '["/tests/test_a.py"]'),
    "a label as test": ('glob(["tests/test_*.py"])', '[":tests"]'),
    "a '..' segment": ('glob(["tests/test_*.py"])', '["tests/../x.py"]'),
    "a glob ending in '/'": ('glob(["testdata/**"])', 'glob(["testdata/"])'),
    "'**' inside a segment": ('glob(["testdata/**"])', 'glob(["testdata/a**"])'),
    "a row not an invariant": ('invariant(id = "first_module"', 'struct(id = "first_module"'),
    "a row as a string": (
        'invariant(id = "first_module", globs = ["src/mod_0.py"]),',
        '"first_module",',
    ),
    "rows not a list": ("rows = [", 'rows = "x", other = ['),
    "an unknown row key": ('globs = ["src/mod_0.py"]', 'globs = ["src/mod_0.py"], why = "x"'),
    "a row without id": ('id = "first_module", ', ""),
    "a bad row id": ('id = "first_module"', 'id = "first module"'),
    "a row id twice": ('id = "first_module"', 'id = "contract"'),
    "a row without globs": ('globs = ["src/mod_0.py"]', "globs = []"),
    "a row glob that is a label": ('globs = ["src/mod_0.py"]', 'globs = ["@x//src"]'),
    "a bad property": ('globs = ["src/mod_0.py"]', 'globs = ["x"], properties = ["p.py"]'),
    "a property in no .py file": ('globs = ["src/mod_0.py"]', 'globs = ["x"], relations = ["p:r"]'),
    "examples of 0": ('{"examples": 20}', '{"examples": 0}'),
    "seconds of 0": ('{"examples": 20}', '{"seconds": 0}'),
    "an unknown budget key": ('{"examples": 20}', '{"runs": 20}'),
    "a budget list": ('{"examples": 20}', "[20]"),
    "examples as a flag": ('{"examples": 20}', '{"examples": True}'),
    "another lock": ("    owners", '    lock = "other.lock",\n    owners'),
    "a lock in another package": ("    owners", '    lock = "//b:oracle_gate.lock",\n    owners'),
    "a missing freeze ledger": ("    owners", '    freeze = "flake_freeze.yaml",\n    owners'),
    "an external dep": ('"//libs/c",', '"@other//libs/c",'),
    "a dep with '..'": ('"//libs/c",', '"//libs/../c",'),
    "a dep with no name": ('"//libs/c",', '"//libs/c:",'),
    "deps not a list": ("deps = [", 'deps = "//libs/c", other = ['),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_mistaken_gate_is_left_to_gate_matrix_which_names_file_and_line(name: str) -> None:
    text = HEADER + GOOD["the bench's gate"].replace(*BAD[name])
    assert text != HEADER + GOOD["the bench's gate"]
    said = _in_python(text, FILES)
    assert isinstance(said, str), f"gate_matrix accepted {name}"
    assert said.startswith(f"{PATH}:"), said
    if _native is not None:
        assert _natively(text, FILES) is None


def test_a_second_gate_is_left_to_gate_matrix() -> None:
    text = HEADER + GOOD["no rows at all"] * 2
    assert _in_python(text, FILES) == (
        f"{PATH}:3: declares a second oracle_gate (the first is on line 2); "
        "a package has one matrix"
    )
    if _native is not None:
        assert _natively(text, FILES) is None


# --- a property: whatever the native core builds, gate_matrix builds too -------------------

# Per argument: values gate_matrix accepts (with the right files), then mistakes and
# values the native core leaves to it. Mostly the first, so both sides are explored.
_VALUES: dict[str, tuple[list[str], list[str]]] = {
    "name": (['"g"'], ['""', "1", "None"]),
    "owners": (['["@a"]', "[]", "None"], ['["@a", 1]', '"@a"', 'glob(["p.py"])']),
    "tests": (
        [
            '["tests/test_a.py"]',
            'glob(["tests/*.py"])',
            'glob(["tests/**"], exclude = ["tests/test_b.py"])',
            'glob(["t?sts/test_[ab].py", "*"])',
            '["x.py"] + glob(["**/test_*.py"])',
            "None",
        ],
        [
            'glob(["**/test_*.py"], exclude_directories = 0)',
            'glob(["tests/"])',
            '["/abs"]',
            '[":label"]',
            '["a/../b"]',
            '["a**"]',
            "[1]",
            "{}",
        ],
    ),
    "fixtures": (['glob(["testdata/**"])', '["testdata/c.json"]', "[]"], ['["./x"]', '"x"']),
    "lock": (['"oracle_gate.lock"', "None"], ['"other.lock"', '":oracle_gate.lock"']),
    "seeds": (['"seeds.jsonl"', "None"], ['"a/seeds.jsonl"']),
    "freeze": (["None"], ['"flake_freeze.yaml"']),
    "deps": (
        ["[]", '["//b:g"]', '["//b"]', '[":s"]', '["//b/c:d", ":e"]'],
        ['["@r//b:g"]', '["//b/../c:g"]', '["b"]', '["//b:"]', '"//b"', '["//b c:g"]'],
    ),
    "rows": (["None", "[]"], ['"x"']),
}
_ROWS = (
    [
        'invariant(id = "r", globs = ["src/*.py"])',
        'invariant(id = "r2", globs = ["x"], properties = ["p.py:prop"])',
        'invariant(id = "r4", globs = ["x"], budget = {"seconds": 5})',
        'invariant(id = "r7", globs = ["x"], budget = None)',
        'invariant(id = "r11", globs = ["x"], fixtures = ["testdata/**"])',
        'invariant(id = "r12", globs = ["x"], partitions = ["p.py:P"], relations = ["m/q.py:_r1"])',
        'invariant("r14", id = "r14", globs = ["x"], budget = {"examples": 3, "seconds": 1})',
    ],
    [
        'invariant(id = "r", globs = [])',
        'invariant(id = "r2", globs = ["x"], properties = ["p.py"])',
        'invariant(id = "bad id", globs = ["x"])',
        'invariant(id = "-r", globs = ["x"])',
        'invariant(globs = ["x"])',
        'invariant(id = None, globs = ["x"])',
        'invariant(id = "r3", globs = ["x"], budget = {"examples": 0})',
        'invariant(id = "r5", globs = ["x"], budget = {"examples": 20, "seconds": 0})',
        'invariant(id = "r6", globs = ["x"], budget = {"other": 1})',
        'invariant(id = "r7", globs = ["x"], budget = [])',
        'invariant(id = "r8", globs = ["x"], extra = 1)',
        'struct(id = "r9", globs = ["x"])',
        '"row"',
        'invariant(id = "r10", globs = glob(["src/*.py"]))',
        'invariant(id = "r13", globs = ["x"], relations = ["m/q.py:1r"])',
    ],
)


def _pick(draw: st.DrawFn, choices: tuple[list[str], list[str]]) -> str:
    good, mistaken = choices
    return draw(st.sampled_from(mistaken if draw(st.integers(0, 7)) == 0 else good))


@st.composite
def _gates(draw: st.DrawFn) -> str:
    arguments = []
    for key, choices in _VALUES.items():
        if key == "name" or draw(st.booleans()):
            value = _pick(draw, choices)
            if key == "rows" and draw(st.booleans()):
                rows = [_pick(draw, _ROWS) for _ in range(draw(st.integers(0, 3)))]
                value = "[" + ", ".join(rows) + "]"
            arguments.append(f"    {key} = {value},\n")
    arguments = draw(st.permutations(arguments))
    second = 'oracle_gate(name = "again")\n' if draw(st.integers(0, 7)) == 0 else ""
    return HEADER + "oracle_gate(\n" + "".join(arguments) + ")\n" + second


@needs_native
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(_gates(), st.sets(st.sampled_from(FILES)))
def test_the_native_core_builds_a_matrix_only_as_gate_matrix_does(
    text: str, files: set[str]
) -> None:
    owned = tuple(sorted(files))
    found = _natively(text, owned)
    said = _in_python(text, owned)
    event("built natively" if found is not None else "left to gate_matrix")
    if found is not None:
        assert found == said


# --- through the graph: the same packages, and the same error, under both backends -------


def _graph_outcome(
    repo: GitRepo, commit: str, native: bool, monkeypatch: pytest.MonkeyPatch
) -> object:
    with monkeypatch.context() as patched:
        patched.setattr(starlark, "available", lambda: native)
        if native:
            patched.setattr(backend, "_load", lambda: ("native", _native))
        try:
            return dict(load_graph(GitTree(repo.path, commit)).packages)
        except ConfigError as error:
            return str(error)


@needs_native
@pytest.mark.parametrize("mistake", [None, "a bad row id", "an external dep", "seconds of 0"])
def test_the_graph_reads_gates_alike_whichever_backend(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, mistake: str | None
) -> None:
    gate = GOOD["the bench's gate"]
    if mistake is not None:
        gate = gate.replace(*BAD[mistake])
    files = {
        "WORKSPACE": "",
        "libs/b/BUILD": HEADER + GOOD["no rows at all"].replace('"empty"', '"oracle_gate"'),
        "libs/c/BUILD": HEADER + GOOD["no rows at all"].replace('"empty"', '"c"'),
        PATH: HEADER + gate,
        **{f"a/{path}": "x\n" for path in FILES if path != "BUILD.bazel"},
    }
    for path, text in files.items():
        repo.write(path, text)
    commit = repo.commit("gates")
    native = _graph_outcome(repo, commit, True, monkeypatch)
    static = _graph_outcome(repo, commit, False, monkeypatch)
    assert native == static
    if mistake is None:
        assert isinstance(native, dict) and sorted(native) == ["a", "libs/b", "libs/c"]
    else:
        assert isinstance(native, str) and native.startswith(f"{PATH}:"), native


@needs_native
@pytest.mark.parametrize("directory", ["", "a"])
def test_a_gate_with_a_file_name_that_is_not_utf8_is_read_alike(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, directory: str
) -> None:
    """Such a name cannot reach the native core; gate_matrix builds that gate, glob and all."""
    prefix = f"{directory}/" if directory else ""
    repo.write("WORKSPACE", "")
    repo.write(f"{prefix}BUILD", HEADER + 'oracle_gate(name = "g", tests = glob(["t/*"]))\n')
    repo.write(f"{prefix}t/plain.txt", "x\n")
    odd = os.fsdecode(b"t/caf\xe9.txt")  # git's bytes, decoded with a surrogate
    (repo.path / f"{prefix}{odd}").write_bytes(b"x\n")
    # A Bazel package whose directory is no UTF-8 name: the static reader reads it.
    package = prefix + os.fsdecode(b"t/sub\xff")
    (repo.path / package).mkdir()
    (repo.path / package / "BUILD").write_text('py_library(name = "x", deps = ["//c:c"])\n')
    (repo.path / package / "x.txt").write_text("x\n")
    repo.write("c/BUILD", "")
    commit = repo.commit("names that are not UTF-8")
    native = _graph_outcome(repo, commit, True, monkeypatch)
    assert native == _graph_outcome(repo, commit, False, monkeypatch)
    assert isinstance(native, dict)
    assert native[directory].matrix.tests == tuple(sorted([odd, "t/plain.txt"]))
    with monkeypatch.context() as patched:
        patched.setattr(starlark, "available", lambda: True)
        patched.setattr(backend, "_load", lambda: ("native", _native))
        graph = load_graph(GitTree(repo.path, commit))
    assert graph.why(package, "c") == f"{package}/BUILD:1 names //c:c"


@given(
    layout=st.lists(
        st.tuples(
            st.sampled_from(["", "src/", "sub/", "sub/deep/", "subx/", "src/sub/", "a b/"]),
            st.sampled_from(["x.py", "BUILD", "BUILD.bazel", "t.json", "é.txt"]),
        ),
        max_size=12,
    ),
    root=st.sampled_from(["", "w"]),
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_native_core_lists_a_gates_files_as_package_files_does(
    layout: list[tuple[str, str]], root: str
) -> None:
    """Files of subpackages (a directory with a BUILD file, however deep) are not the gate's."""
    prefix = f"{root}/" if root else ""
    files = sorted({f"{prefix}a/{d}{name}" for d, name in layout} | {f"{prefix}{PATH}"})
    builds = sorted({p.rpartition("/")[0] for p in files if p.endswith(("/BUILD", "/BUILD.bazel"))})
    inputs = [
        (
            f"{d}/BUILD.bazel" if f"{d}/BUILD.bazel" in files else f"{d}/BUILD",
            d.removeprefix(prefix),
            root,
            b'oracle_gate(name = "g", rows = [])\n',
        )
        for d in builds
    ]
    outcomes = _core().evaluate_build_files(inputs, [], [(root, [])], files)[3]
    build_dirs = frozenset(builds)
    for (path, *_), (_, error, _, _, owned, _) in zip(inputs, outcomes, strict=True):
        assert error == ""
        directory = path.rpartition("/")[0]
        assert owned == tuple(package_files(files, directory, build_dirs, sorted(build_dirs)))
