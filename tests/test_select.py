"""Selection: the rows a diff can break, checked against a brute-force oracle and real repos."""

from __future__ import annotations

import itertools
import shutil
from collections import deque
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitrepo import TODAY, GitRepo, run
from oracle_gate.config.notes import Notes
from oracle_gate.config.owners import CodeOwners
from oracle_gate.config.settings import Settings
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.graph import PackageGraph, load_graph
from oracle_gate.model import Change, ChangeKind, Diff, Lane
from oracle_gate.pipeline import Request, stage
from oracle_gate.repo.trees import GitTree
from oracle_gate.select import Selection, describe_chain, select

LOAD = 'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n'


class DictTree:
    """An in-memory tree: enough of ``Tree`` for ``load_graph``."""

    def __init__(self, files: dict[str, str]) -> None:
        self._files = {path: text.encode() for path, text in files.items()}

    def files(self) -> tuple[str, ...]:
        return tuple(sorted(self._files))

    def read(self, path: str) -> bytes:
        return self._files[path]

    def digests(self, paths: list[str]) -> list[str]:
        raise AssertionError("selection never hashes")


def _facts(graph: PackageGraph) -> Facts:
    unused = GitTree(Path("/nonexistent"), "0" * 40)  # selection never reads a tree
    return Facts(
        diff=Diff(base="0" * 40, head="1" * 40, changes=(), commits=()),
        parent=unused,
        head=unused,
        parent_graph=graph,
        head_graph=graph,
        notes=Notes(notes=(), freeze_triage=()),
        codeowners=CodeOwners(rules=()),
        settings=Settings(),
        today=TODAY,
    )


def _build(deps: list[str], rows: list[str] | None) -> str:
    """A BUILD file: a library with ``deps`` and, when ``rows`` is given, a gate."""
    labels = ", ".join(f'"//{dep}:lib"' for dep in deps)
    text = LOAD + f'py_library(name = "lib", srcs = glob(["src/*.py"]), deps = [{labels}])\n'
    if rows is not None:
        invariants = {
            "all": 'invariant(id = "all", globs = ["src/*.py"])',
            "a": 'invariant(id = "a", globs = ["src/a.py"])',
        }
        listed = ", ".join(invariants[row] for row in rows)
        text += f'oracle_gate(name = "oracle_gate", rows = [{listed}])\n'
    return text


# --- property: selection equals a brute-force computation on random graphs ----------------


@st.composite
def _monorepos(draw: st.DrawFn) -> tuple[int, set[tuple[int, int]], dict[int, list[str]], set[str]]:
    count = draw(st.integers(min_value=1, max_value=7))
    nodes = st.integers(min_value=0, max_value=count - 1)
    # Cycles welcome; a label naming the same package is no package edge, so no self-loops.
    edges = draw(
        st.sets(st.tuples(nodes, nodes).filter(lambda e: e[0] != e[1]), max_size=count * 2)
    )
    gated = {
        node: draw(st.lists(st.sampled_from(["all", "a"]), unique=True, max_size=2))
        for node in range(count)
        if draw(st.booleans())
    }
    files = [f"p{n}/src/{name}.py" for n in range(count) for name in ("a", "b")]
    touched = draw(st.sets(st.sampled_from(files), min_size=1, max_size=4))
    return count, edges, gated, touched


def _brute_force_dependents(edges: set[tuple[int, int]], touched: set[int]) -> set[int]:
    """Nodes with a path of one or more edges to a touched node (independent of graph/model.py)."""
    found = set()
    for start in {a for a, _ in edges}:
        seen: set[int] = set()
        stack = [b for a, b in edges if a == start]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            stack.extend(b for a, b in edges if a == node)
        if seen & touched:
            found.add(start)
    return found


def _distance_to_touched(edges: set[tuple[int, int]], touched: set[int]) -> dict[int, int]:
    """Shortest number of edges (>= 1) from each node to a touched node."""
    distance: dict[int, int] = {}
    queue = deque((t, 0) for t in sorted(touched))
    while queue:
        node, steps = queue.popleft()
        for a, b in sorted(edges):
            if b == node and a not in distance:
                distance[a] = steps + 1
                queue.append((a, steps + 1))
    return distance


@settings(max_examples=50, deadline=None, database=None)
@given(_monorepos())
def test_selection_equals_brute_force_on_random_graphs(
    monorepo: tuple[int, set[tuple[int, int]], dict[int, list[str]], set[str]],
) -> None:
    count, edges, gated, touched_files = monorepo
    files: dict[str, str] = {}
    for node in range(count):
        deps = sorted(f"p{b}" for a, b in edges if a == node)
        files[f"p{node}/BUILD.bazel"] = _build(deps, gated.get(node))
        files[f"p{node}/src/a.py"] = files[f"p{node}/src/b.py"] = "x = 1\n"
    graph = load_graph(DictTree(files))
    laned = tuple(
        LanedPath(Change(path, ChangeKind.MODIFIED), Lane.PRODUCTION, graph.package_of(path))
        for path in sorted(touched_files)
    )
    selection = select(laned, _facts(graph))

    touched = {int(path.split("/")[0][1:]) for path in touched_files}
    dependents = _brute_force_dependents(edges, touched)
    expected_rows = {(f"p{n}", row) for n in dependents if n in gated for row in gated[n]}
    unmeasured = set()
    for path in touched_files:
        node = int(path.split("/")[0][1:])
        matching = [r for r in gated.get(node, []) if r == "all" or path.endswith("/a.py")]
        expected_rows |= {(f"p{node}", row) for row in matching}
        if not matching:
            unmeasured.add(path)
    assert {(s.package, s.row_id) for s in selection.rows} == expected_rows
    assert {p.path for p in selection.packages} == {
        f"p{n}" for n in touched | dependents if n in gated
    }
    assert set(selection.affected) == {f"p{n}" for n in touched | dependents}
    assert set(selection.unmeasured) == unmeasured
    assert selection.targets == tuple(sorted(f"//{p.path}:oracle_gate" for p in selection.packages))

    # Every explanation is a real dependency path, as short as any, ending where it started.
    distance = _distance_to_touched(edges, touched)
    for selected in selection.rows:
        chain = [int(node[1:]) for node in selected.chain]
        assert all((a, b) in edges for a, b in itertools.pairwise(chain))
        assert chain[-1] in touched
        assert selected.path.startswith(selected.chain[-1] + "/")
        if len(chain) > 1:
            assert len(chain) - 1 == distance[chain[0]]


# --- real repositories -------------------------------------------------------------------


def _bazel_repo(repo: GitRepo, packages: dict[str, tuple[list[str], list[str] | None]]) -> str:
    for name, (deps, rows) in packages.items():
        repo.write(f"{name}/BUILD.bazel", _build(deps, rows))
        repo.write(f"{name}/src/a.py", "def f():\n    return 1\n")
        repo.write(f"{name}/src/b.py", "def g():\n    return 2\n")
    return repo.commit("bazel packages")


def _rows(selection: Selection) -> set[tuple[str, str]]:
    return {(s.package, s.row_id) for s in selection.rows}


def test_cycle_in_the_graph_selects_each_package_once(repo: GitRepo) -> None:
    base = _bazel_repo(
        repo,
        {"libs/a": (["libs/b"], ["all", "a"]), "libs/b": (["libs/a"], ["a"]), "libs/c": ([], [])},
    )
    repo.write("libs/b/src/b.py", "def g():\n    return 3\n")
    selection = stage(Request(repo.path, base, repo.commit("edit b"), TODAY)).selection
    # b's own change matches no row of b (only src/a.py is guarded), but b depends on a,
    # which depends on b: around the cycle b depends on itself, so all its rows run.
    assert _rows(selection) == {("libs/a", "all"), ("libs/a", "a"), ("libs/b", "a")}
    assert selection.unmeasured == ("libs/b/src/b.py",)
    assert [p.path for p in selection.packages] == ["libs/a", "libs/b"]


def test_dependents_through_a_package_without_a_gate_are_selected(repo: GitRepo) -> None:
    base = _bazel_repo(
        repo,
        {
            "apps/web": (["libs/mid"], ["all"]),
            "libs/mid": (["libs/core"], None),
            "libs/core": ([], ["a"]),
            "libs/other": ([], ["all"]),
        },
    )
    repo.write("libs/core/src/a.py", "def f():\n    return 5\n")
    selection = stage(Request(repo.path, base, repo.commit("edit core"), TODAY)).selection
    assert _rows(selection) == {("apps/web", "all"), ("libs/core", "a")}
    assert selection.affected == ("apps/web", "libs/core", "libs/mid")
    (web,) = [s for s in selection.rows if s.package == "apps/web"]
    assert web.chain == ("apps/web", "libs/mid", "libs/core")
    assert describe_chain(web) == (
        "apps/web -> libs/mid [apps/web/BUILD.bazel:2 names //libs/mid:lib] "
        "-> libs/core [libs/mid/BUILD.bazel:2 names //libs/core:lib]: libs/core/src/a.py "
        "(depends on libs/core, where production path changed)"
    )


def test_package_deleted_by_the_diff_still_selects_what_names_it(repo: GitRepo) -> None:
    base = _bazel_repo(repo, {"apps/web": (["libs/gone"], ["all"]), "libs/gone": ([], ["all"])})
    repo.remove("libs/gone")
    selection = stage(Request(repo.path, base, repo.commit("delete libs/gone"), TODAY)).selection
    # apps/web still names //libs/gone:lib (Bazel would now fail to build it): it is selected.
    assert _rows(selection) == {("apps/web", "all")}
    assert [p.path for p in selection.packages] == ["apps/web"]
    assert "libs/gone" in selection.affected


def test_a_gate_naming_a_package_through_a_linked_directory_is_selected(
    repo: GitRepo,
) -> None:
    """Bazel follows ``libs/alias -> real``: ``//libs/alias:lib`` is ``libs/real``'s code."""
    base = _bazel_repo(repo, {"apps/web": (["libs/alias"], ["all"]), "libs/real": ([], [])})
    (repo.path / "libs" / "alias").symlink_to("real")
    base = repo.commit("libs/alias is libs/real")
    repo.write("libs/real/src/a.py", "def f():\n    return 2\n")
    selection = stage(Request(repo.path, base, repo.commit("edit the original"), TODAY)).selection
    assert _rows(selection) == {("apps/web", "all")}
    assert {"libs/real", "libs/alias", "apps/web"} <= set(selection.affected)


def test_a_link_added_by_the_diff_is_followed_in_the_head(repo: GitRepo) -> None:
    base = _bazel_repo(repo, {"apps/web": (["libs/alias"], ["all"]), "libs/real": ([], [])})
    (repo.path / "libs" / "alias").symlink_to("real")
    repo.write("libs/real/src/a.py", "def f():\n    return 2\n")
    selection = stage(
        Request(repo.path, base, repo.commit("link, and edit the original"), TODAY)
    ).selection
    assert _rows(selection) == {("apps/web", "all")}


def test_a_link_out_of_the_repository_adds_no_dependency(repo: GitRepo) -> None:
    base = _bazel_repo(repo, {"apps/web": ([], ["all"]), "libs/real": ([], [])})
    (repo.path / "apps" / "web" / "hosts").symlink_to("/etc/hosts")
    base = repo.commit("a link out")
    repo.write("libs/real/src/a.py", "def f():\n    return 2\n")
    selection = stage(Request(repo.path, base, repo.commit("edit libs/real"), TODAY)).selection
    assert _rows(selection) == set()


def test_file_moved_between_packages_selects_both(repo: GitRepo) -> None:
    base = _bazel_repo(repo, {"libs/a": ([], ["a"]), "libs/b": ([], ["all"]), "libs/c": ([], [])})
    repo.git("mv", "libs/a/src/a.py", "libs/b/src/moved.py")
    selection = stage(Request(repo.path, base, repo.commit("move a.py to b"), TODAY)).selection
    assert _rows(selection) == {("libs/a", "a"), ("libs/b", "all")}
    (moved_out,) = [s for s in selection.rows if s.package == "libs/a"]
    assert moved_out.reason == "libs/a/src/a.py moved out of this package"


def test_test_only_change_selects_no_rows_of_its_package_but_its_bazel_dependents(
    repo: GitRepo,
) -> None:
    """Its own rows judge the test through the lock; a rule of libs/a may read the file
    (a ``glob``), so what depends on libs/a runs again."""
    base = _bazel_repo(repo, {"apps/web": (["libs/a"], ["all"]), "libs/a": ([], ["all"])})
    repo.replace("libs/a/BUILD.bazel", "rows = [", 'tests = glob(["tests/test_*.py"]), rows = [')
    repo.write("libs/a/tests/test_a.py", "def test_a():\n    assert True\n")
    base = repo.commit("add a test")
    repo.write("libs/a/tests/test_a.py", "def test_a():\n    assert 1 == 1\n")
    selection = stage(Request(repo.path, base, repo.commit("edit the test"), TODAY)).selection
    assert [p.path for p in selection.packages] == ["apps/web", "libs/a"]
    assert _rows(selection) == {("apps/web", "all")}
    assert selection.rows[0].reason == "depends on libs/a, where test path changed"


def test_changed_bzl_selects_the_packages_that_load_it(repo: GitRepo) -> None:
    base = _bazel_repo(repo, {"apps/web": ([], ["all"]), "libs/a": ([], ["a"])})
    repo.replace("apps/web/BUILD.bazel", LOAD, LOAD + 'load("//tools:macros.bzl", "m")\n')
    repo.write("tools/BUILD.bazel", "")
    repo.write("tools/macros.bzl", "def m():\n    pass\n")
    base = repo.commit("macros")
    repo.write("tools/macros.bzl", "def m():\n    return None\n")
    selection = stage(Request(repo.path, base, repo.commit("edit the macro"), TODAY)).selection
    assert _rows(selection) == {("apps/web", "all")}


@pytest.mark.parametrize(
    ("path", "rows", "ripples"),
    [
        ("libs/intervals/props.py", {("libs/intervals", "merge_ranges_contract")}, False),
        (
            "libs/intervals/testdata/ranges/new.json",
            {("libs/intervals", "merge_ranges_contract")},
            True,
        ),
        ("libs/intervals/tests/test_extra.py", set(), False),
        ("libs/intervals/seeds.jsonl", {("libs/intervals", "merge_ranges_contract")}, False),
    ],
)
def test_oracle_changes_select_their_own_rows_and_ripple_only_when_dependents_can_see_them(
    example_repo: tuple[GitRepo, str], path: str, rows: set[tuple[str, str]], ripples: bool
) -> None:
    repo, base = example_repo
    if (repo.path / path).exists():
        repo.append(path, "\n")
    else:
        repo.write(path, "def test_extra():\n    assert 1\n" if path.endswith(".py") else "[]\n")
    selection = stage(Request(repo.path, base, repo.commit("oracle change"), TODAY)).selection
    assert _rows(selection) - {("services/scheduler", "busy_windows")} == rows
    # services/scheduler depends on libs/intervals.
    assert (("services/scheduler", "busy_windows") in _rows(selection)) is ripples
    assert "libs/intervals" in {p.path for p in selection.packages}


def test_invariants_yaml_packages_select_through_deps(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace("libs/intervals/invariants.yaml", "rows:", 'deps: ["../codec"]\nrows:')
    base = repo.commit("intervals depends on codec")
    repo.append("libs/codec/codec/__init__.py", "\n# tweak\n")
    selection = stage(Request(repo.path, base, repo.commit("touch codec"), TODAY)).selection
    packages = {s.package: s for s in selection.why_packages}
    assert set(packages) == {"libs/codec", "libs/intervals", "services/scheduler"}
    assert packages["libs/intervals"].chain == ("libs/intervals", "libs/codec")
    assert packages["services/scheduler"].chain == (
        "services/scheduler",
        "libs/intervals",
        "libs/codec",
    )
    assert {s.package for s in selection.rows} == set(packages)


# --- the CLI -----------------------------------------------------------------------------


def test_select_cli_explains_rows_and_writes_bazel_targets(repo: GitRepo, tmp_path: Path) -> None:
    base = _bazel_repo(repo, {"apps/web": (["libs/a"], ["all"]), "libs/a": ([], ["a", "all"])})
    repo.write("libs/a/src/b.py", "def g():\n    return 7\n")
    repo.commit("edit b")
    targets = tmp_path / "targets.txt"
    done = run(
        "select",
        "--repo",
        str(repo.path),
        "--base",
        base,
        "--explain",
        "--bazel-targets",
        str(targets),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "selected 2 package(s), 2 row(s); 2 Bazel/matrix package(s) affected"
    assert lines[1] == "apps/web  all"
    assert lines[2].startswith("    why: apps/web -> libs/a [apps/web/BUILD.bazel:2 names //libs/a")
    assert lines[3:5] == [
        "libs/a  all",
        "    why: libs/a: libs/a/src/b.py (the path matches the row's globs)",
    ]
    assert targets.read_text() == "//apps/web:oracle_gate\n//libs/a:oracle_gate\n"


def test_select_cli_build_file_that_does_not_parse_exits_2_with_file_and_line(
    repo: GitRepo,
) -> None:
    base = _bazel_repo(repo, {"libs/a": ([], ["all"])})
    repo.write("libs/a/BUILD.bazel", LOAD + 'py_library(name = "lib",\n    deps = [,],\n)\n')
    repo.commit("break BUILD")
    done = run("select", "--repo", str(repo.path), "--base", base)
    assert done.returncode == 2
    assert done.stderr.startswith("oracle-gate: error: libs/a/BUILD.bazel:3: BUILD file does not")
    assert "Traceback" not in done.stderr


def test_select_cli_bazel_graph_without_bazel_is_a_gate_error(
    repo: GitRepo, tmp_path: Path
) -> None:
    base = _bazel_repo(repo, {"libs/a": ([], ["all"])})
    repo.write("WORKSPACE", "")
    repo.commit("workspace")
    bin_dir = tmp_path / "bin"  # git, and no bazel
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(str(shutil.which("git")))
    done = run(
        "select", "--repo", str(repo.path), "--base", base, "--graph", "bazel", PATH=str(bin_dir)
    )
    assert done.returncode == 2
    assert "--graph=bazel needs 'bazel' on PATH" in done.stderr


def test_select_cli_unwritable_targets_file_is_a_gate_error(repo: GitRepo, tmp_path: Path) -> None:
    base = _bazel_repo(repo, {"libs/a": ([], ["all"])})
    repo.write("libs/a/src/a.py", "def f():\n    return 9\n")
    repo.commit("edit")
    target = tmp_path / "missing" / "targets.txt"
    done = run("select", "--repo", str(repo.path), "--base", base, "--bazel-targets", str(target))
    assert done.returncode == 2
    assert f"{target}: cannot write (No such file or directory)" in done.stderr


def test_select_cli_says_nothing_of_bazel_outside_a_bazel_workspace(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace("libs/intervals/intervals/__init__.py", "merged = []", "merged = list()")
    repo.commit("edit intervals")
    done = run("select", "--repo", str(repo.path), "--base", base)
    assert done.returncode == 0, done.stderr
    assert "Bazel" not in done.stdout
    assert done.stdout.splitlines()[0] == (
        "selected 2 package(s), 2 row(s); 2 package(s) (dependents included) affected"
    )
    # The same repository with a WORKSPACE file is a Bazel workspace.
    repo.write("WORKSPACE", "")
    done = run("select", "--repo", str(repo.path), "--base", base)
    assert "2 Bazel/matrix package(s) affected" in done.stdout.splitlines()[0]


# --- files the classifier does not list, and gates around Bazel subpackages ---------------


@pytest.mark.parametrize(
    "path", ["libs/asm/syscall_amd64.s", "libs/asm/entry.S", "libs/asm/api.proto", "libs/asm/LIST"]
)
def test_any_file_of_a_bazel_package_ripples_to_its_dependents(repo: GitRepo, path: str) -> None:
    """kops: an edit to a ``.s`` file outside every gate selected nothing, Bazel said 492."""
    base = _bazel_repo(repo, {"apps/web": (["libs/asm"], ["all"]), "libs/asm": ([], None)})
    repo.write(path, "one\n")
    base = repo.commit("add the file")
    repo.write(path, "two\n")
    selection = stage(Request(repo.path, base, repo.commit("edit it"), TODAY)).selection
    assert _rows(selection) == {("apps/web", "all")}
    (web,) = selection.rows
    assert web.chain == ("apps/web", "libs/asm")


def test_a_doc_inside_a_bazel_package_ripples_but_a_doc_outside_does_not(repo: GitRepo) -> None:
    base = _bazel_repo(repo, {"apps/web": (["libs/a"], ["all"]), "libs/a": ([], None)})
    repo.write("libs/a/notes.md", "one\n")
    repo.write("docs/guide.md", "one\n")
    base = repo.commit("docs")
    repo.write("docs/guide.md", "two\n")
    assert stage(Request(repo.path, base, repo.commit("outside"), TODAY)).selection.rows == ()
    repo.write("libs/a/notes.md", "two\n")  # may be some rule's data
    selection = stage(Request(repo.path, base, repo.commit("inside"), TODAY)).selection
    assert _rows(selection) == {("apps/web", "all")}


def test_a_gate_around_an_affected_bazel_subpackage_is_selected(repo: GitRepo) -> None:
    """jax: ``jaxlib/tools`` was affected and the ``jaxlib`` gate around it was not selected."""
    base = _bazel_repo(
        repo,
        {
            "jaxlib": ([], ["all"]),
            "jaxlib/tools": (["libs/core"], None),
            "libs/core": ([], None),
            "other": ([], ["all"]),
        },
    )
    repo.write("libs/core/src/a.py", "def f():\n    return 9\n")
    selection = stage(Request(repo.path, base, repo.commit("edit core"), TODAY)).selection
    assert _rows(selection) == {("jaxlib", "all")}
    (gate,) = selection.rows
    assert gate.chain == ("jaxlib", "jaxlib/tools", "libs/core")
    assert describe_chain(gate).startswith(
        "jaxlib -> jaxlib/tools [jaxlib holds jaxlib/tools] "
        "-> libs/core [jaxlib/tools/BUILD.bazel:2 names //libs/core:lib]"
    )


def test_a_gate_is_not_selected_by_a_sibling_or_a_subpackage_of_another(repo: GitRepo) -> None:
    base = _bazel_repo(
        repo,
        {
            "jaxlib": ([], ["all"]),
            "jaxlibs/tools": (["libs/core"], None),  # a sibling whose name starts alike
            "libs/core": ([], None),
        },
    )
    repo.write("libs/core/src/a.py", "def f():\n    return 9\n")
    selection = stage(Request(repo.path, base, repo.commit("edit core"), TODAY)).selection
    assert _rows(selection) == set()
    assert "jaxlibs/tools" in selection.affected


# --- package boundaries a patch moves, and files reached through links ---------------------

GLOBBED = 'filegroup(name = "l", srcs = glob(["**"]), visibility = ["//visibility:public"])\n'
USER = LOAD + (
    'filegroup(name = "a", srcs = ["//lib:l"])\n'
    'oracle_gate(name = "oracle_gate", rows = [invariant(id = "all", globs = ["*"])])\n'
)


def _globbing_repo(repo: GitRepo, extra: dict[str, str] | None = None) -> str:
    """``lib`` globs every file below it; the gate ``a`` names it."""
    files = {"WORKSPACE": "", "lib/BUILD": GLOBBED, "lib/sub/x.txt": "1\n", "a/BUILD": USER}
    for path, text in {**files, **(extra or {})}.items():
        repo.write(path, text)
    return repo.commit("lib globs its files; a names it")


def _selected(repo: GitRepo, base: str, message: str) -> set[tuple[str, str]]:
    return _rows(stage(Request(repo.path, base, repo.commit(message), TODAY)).selection)


def test_a_build_file_added_below_a_glob_selects_the_users_of_the_package_it_shrinks(
    repo: GitRepo,
) -> None:
    """Adding lib/sub/BUILD takes sub/x.txt out of //lib:l: a's inputs changed."""
    base = _globbing_repo(repo)
    repo.write("lib/sub/BUILD", "")
    assert _selected(repo, base, "a new package under lib") == {("a", "all")}


def test_a_new_package_of_new_files_takes_nothing_from_the_package_around_it(
    repo: GitRepo,
) -> None:
    base = _globbing_repo(repo)
    repo.write("lib/fresh/BUILD", "")
    repo.write("lib/fresh/y.txt", "1\n")
    assert _selected(repo, base, "a new package of new files") == set()


def test_a_build_file_deleted_below_a_glob_selects_the_users_of_the_package_it_grows(
    repo: GitRepo,
) -> None:
    base = _globbing_repo(repo, {"lib/sub/BUILD": ""})
    repo.remove("lib/sub/BUILD")
    assert _selected(repo, base, "lib/sub joins lib") == {("a", "all")}


def test_a_bazelignore_line_hiding_globbed_files_selects_the_users_of_their_package(
    repo: GitRepo,
) -> None:
    base = _globbing_repo(repo, {"tools/gen/x.txt": "1\n"})
    repo.write(".bazelignore", "lib/sub\n")
    assert _selected(repo, base, "hide lib/sub") == {("a", "all")}
    base = repo.commit("the base of the next patch")
    repo.write(".bazelignore", "lib/sub\ntools/gen\n")  # in no package: no one's inputs
    assert _selected(repo, base, "hide tools/gen too") == set()


def test_an_edit_reached_through_a_link_out_of_every_package_selects_the_link_holder(
    repo: GitRepo,
) -> None:
    """lib/f.txt -> ../data/f.txt: Bazel sees data/f.txt in lib, the patch edits data/."""
    base = _globbing_repo(repo, {"data/f.txt": "1\n", "other/g.txt": "1\n"})
    (repo.path / "lib" / "f.txt").symlink_to("../data/f.txt")
    base = repo.commit("lib links a data file")
    repo.write("other/g.txt", "2\n")
    assert _selected(repo, base, "edit a file nothing links") == set()
    base = repo.commit("the base of the next patch")
    repo.write("data/f.txt", "2\n")
    assert _selected(repo, base, "edit the linked file") == {("a", "all")}


def test_a_build_file_linked_to_a_template_changes_with_the_template(repo: GitRepo) -> None:
    template = 'filegroup(name = "l", srcs = {}, visibility = ["//visibility:public"])\n'
    base = _globbing_repo(repo, {"templates/lib.BUILD": template.format("[]"), "x/BUILD": GLOBBED})
    repo.remove("lib/BUILD")
    (repo.path / "lib" / "BUILD").symlink_to("../templates/lib.BUILD")
    base = repo.commit("lib's BUILD file is a template")
    repo.write("templates/lib.BUILD", template.format('["//x:l"]'))
    assert _selected(repo, base, "the template names //x") == {("a", "all")}


def test_a_bzl_file_loaded_through_a_link_changes_with_its_target(repo: GitRepo) -> None:
    macro = "def grp(name):\n    native.filegroup(name = name, srcs = {})\n"
    base = _globbing_repo(
        repo,
        {
            "shared/defs.bzl": macro.format("[]"),
            "tools/BUILD": "",
            "x/BUILD": GLOBBED,
            "b/BUILD": LOAD
            + 'load("//tools:defs.bzl", "grp")\ngrp(name = "b")\n'
            + 'oracle_gate(name = "oracle_gate", rows = [invariant(id = "all", globs = ["*"])])\n',
        },
    )
    (repo.path / "tools" / "defs.bzl").symlink_to("../shared/defs.bzl")
    base = repo.commit("tools/defs.bzl is shared/defs.bzl")
    repo.write("shared/defs.bzl", macro.format('["//x:l"]'))
    assert ("b", "all") in _selected(repo, base, "the macro names //x")


def _vendored_repo(repo: GitRepo, workspace: str) -> str:
    """@v's users: a names @v//u:u; tp/v1 and tp/v2 are two copies of @v, v2's naming lib."""
    user = 'filegroup(name = "u", srcs = {}, visibility = ["//visibility:public"])\n'
    files = {
        "WORKSPACE": workspace,
        "tp/v1/WORKSPACE": "",
        "tp/v1/u/BUILD": user.format("[]"),
        "tp/v2/WORKSPACE": "",
        "tp/v2/u/BUILD": user.format('["@//lib:l"]'),
        "tp/w/WORKSPACE": "",
        "tp/w/x/BUILD": user.format('["@//lib:l"]').replace('"u"', '"x"', 1),
        "lib/BUILD": GLOBBED,
        "lib/f.txt": "1\n",
        "a/BUILD": USER.replace("//lib:l", "@v//u:u"),
        "other/BUILD": USER.replace("//lib:l", "@v//nothing"),
    }
    for path, text in files.items():
        repo.write(path, text)
    return repo.commit("a uses @v")


def test_a_workspace_repointing_a_repository_selects_what_names_it(repo: GitRepo) -> None:
    base = _vendored_repo(repo, 'local_repository(name = "v", path = "tp/v1")\n')
    repo.write("WORKSPACE", 'local_repository(name = "v", path = "tp/v2")\n')
    assert ("a", "all") in _selected(repo, base, "@v is tp/v2 now")
    base = repo.commit("the base of the next patch")
    repo.write("WORKSPACE", 'local_repository(name = "v", path = "tp/v2")\n# a comment\n')
    assert _selected(repo, base, "a comment") == set()


def test_a_repo_mapping_name_leads_to_the_repository_it_stands_for(repo: GitRepo) -> None:
    """Inside @v, @dep is @w: a -> @v//u -> @dep//x (tp/w/x) -> lib."""
    base = _vendored_repo(
        repo,
        'local_repository(name = "w", path = "tp/w")\n'
        'local_repository(name = "v", path = "tp/v1", repo_mapping = {"@dep": "@w"})\n',
    )
    repo.write("tp/v1/u/BUILD", 'filegroup(name = "u", srcs = ["@dep//x:x"])\n')
    base = repo.commit("@v uses @dep")
    repo.write("lib/f.txt", "2\n")
    assert _selected(repo, base, "edit lib") == {("a", "all")}


def _configured_repo(repo: GitRepo) -> str:
    """Three gates, none at the root: a (naming lib, which globs lib/sub), sub/b, tools/c."""
    gate = USER.replace('filegroup(name = "a", srcs = ["//lib:l"])\n', "")
    files = {
        "WORKSPACE": "",
        ".bazelrc": "import %workspace%/tools/ci.bazelrc\n",
        "tools/ci.bazelrc": "build --color=no\n",
        "requirements.txt": "attrs==23.1.0\n",
        "CODEOWNERS": "* @team\n",
        "REPO.bazel": "repo()\n",
        "tools/deps.MODULE.bazel": "bazel_dep(name = 'rules_cc', version = '0.1')\n",
        "lib/BUILD": GLOBBED,
        "lib/sub/BUILD": "",
        "lib/sub/x.txt": "1\n",
        "a/BUILD": USER,
        "sub/b/BUILD": gate,
        "sub/conftest.py": "import pytest\n",
        "tools/c/BUILD": gate,
    }
    for path, text in files.items():
        repo.write(path, text)
    return repo.commit("three gates; harness files at the root and in sub")


EVERY_GATE = {("a", "all"), ("sub/b", "all"), ("tools/c", "all")}


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        # A conftest.py at the root reaches every test below it, though no gate owns it.
        ({"conftest.py": "def pytest_runtest_call(item): pass\n"}, EVERY_GATE),
        ({"sub/conftest.py": "import pytest\nimport os\n"}, {("sub/b", "all")}),
        ({"sub/conftest.py": None, "conftest.py": "import pytest\n"}, EVERY_GATE),
        # Bazel 4.2.3 then reads lib/sub/x.txt as //lib's: a's input changed.
        ({".bazelrc": "build --deleted_packages=lib/sub\n"}, EVERY_GATE),
        ({"tools/ci.bazelrc": "build --define=x=1\n"}, EVERY_GATE),
        ({"requirements.txt": "attrs==24.1.0\n"}, EVERY_GATE),
        ({"tools/bazel": '#!/bin/sh\nexec bazel-real --noremote "$@"\n'}, EVERY_GATE),
        ({"WORKSPACE": 'workspace(name = "w")\n'}, EVERY_GATE),
        ({"REPO.bazel": 'repo(default_visibility = ["//visibility:private"])\n'}, EVERY_GATE),
        ({".bazeliskrc": "USE_BAZEL_VERSION=8.0.0\n"}, EVERY_GATE),
        # A MODULE.bazel segment counts for the whole repository, not the tree below it.
        ({"sub/b/deps.MODULE.bazel": "bazel_dep(name = 'rules_cc', version = '1')\n"}, EVERY_GATE),
        # Python runs these wherever their directory is on sys.path, not only below it.
        ({"sub/sitecustomize.py": "import builtins\n"}, EVERY_GATE),
        ({"sub/vendor.pth": "import os\n"}, EVERY_GATE),
        # The honest neighbours: comments, who reviews, documentation.
        ({"sub/conftest.py": "import pytest  # the fixtures live in plugins\n"}, set()),
        ({".bazelrc": "# CI adds its own flags\nimport %workspace%/tools/ci.bazelrc\n"}, set()),
        ({"WORKSPACE": "# the main repository\n"}, set()),
        ({"REPO.bazel": "# defaults\nrepo()\n"}, set()),
        ({"tools/deps.MODULE.bazel": "# \nbazel_dep(name = 'rules_cc', version = '0.1')"}, set()),
        ({"CODEOWNERS": "* @team @other\n"}, set()),
        ({"README.md": "# docs\n"}, set()),
    ],
)
def test_a_harness_file_selects_every_package_below_it(
    repo: GitRepo, edits: dict[str, str | None], expected: set[tuple[str, str]]
) -> None:
    base = _configured_repo(repo)
    for path, text in edits.items():
        if text is None:
            repo.remove(path)
        else:
            repo.write(path, text)
    assert _selected(repo, base, "a harness change") == expected


@pytest.mark.parametrize(
    ("rc", "expected"),
    [
        ("build:ci --deleted_packages=lib/other,lib/sub\n", {("a", "all")}),
        ("query --deleted_packages //lib/sub\n", {("a", "all")}),
        # The honest neighbour: lib/sub is a package of its own, which a does not name.
        ("build --color=no\n", set()),
        ("build --deleted_packages=lib/subpackage\n", set()),
    ],
)
def test_a_package_the_bazelrc_deletes_belongs_to_the_package_around_it(
    repo: GitRepo, rc: str, expected: set[tuple[str, str]]
) -> None:
    """With lib/sub deleted (in an imported rc file), lib/sub/x.txt is //lib's: a reads it."""
    _configured_repo(repo)
    repo.write("tools/ci.bazelrc", rc)
    base = repo.commit("the rc file imported by .bazelrc")
    repo.write("lib/sub/x.txt", "2\n")
    assert _selected(repo, base, "edit a file of lib/sub") == expected


@pytest.mark.parametrize(
    ("rc", "expected"),
    [
        ("build --package_path=%workspace%/overlay:%workspace%\n", {("a", "all")}),
        ("query --package_path overlay:.\n", {("a", "all")}),
        # The honest neighbours: no root in the tree holds a //lib but the workspace.
        ("build --package_path=/opt/packages:%workspace%\n", set()),
        ("build --color=no\n", set()),
    ],
)
def test_a_package_path_root_may_hold_what_bazel_reads_as_the_package(
    repo: GitRepo, rc: str, expected: set[tuple[str, str]]
) -> None:
    """Bazel 4.2.3 reads //lib from overlay/lib when --package_path lists overlay first:
    an edit there is an edit of the //lib that a names."""
    _configured_repo(repo)
    repo.write("tools/ci.bazelrc", rc)
    repo.write("overlay/lib/BUILD", GLOBBED)
    repo.write("overlay/lib/x.txt", "1\n")
    base = repo.commit("the rc file imported by .bazelrc, and an overlay")
    repo.write("overlay/lib/x.txt", "2\n")
    assert _selected(repo, base, "edit a file of overlay/lib") == expected


def _gated_lib_repo(repo: GitRepo, user: str) -> str:
    """lib is a gate whose filegroup ``l`` globs every file; a's BUILD is ``user``;
    lib/sub is a matrix package with no BUILD file, so its files are //lib's."""
    lib = LOAD + (
        'filegroup(name = "l", srcs = glob(["**"]), visibility = ["//visibility:public"])\n'
        'oracle_gate(name = "oracle_gate", tests = glob(["tests/test_*.py"]), rows = [\n'
        '    invariant(id = "core", globs = ["core.py"], properties = ["props.py:prop_x"]),\n'
        "])\n"
    )
    sub = (
        'version: 1\nowners: ["@sub"]\nrows:\n  - id: r\n    globs: ["*.py"]\n'
        '    properties: ["props.py:prop_y"]\n'
    )
    files = {
        "WORKSPACE": "",
        "lib/BUILD": lib,
        "lib/core.py": "X = 1\n",
        "lib/props.py": "def prop_x(x):\n    return True\n",
        "lib/tests/test_core.py": "def test_core():\n    assert True\n",
        "lib/seeds.jsonl": "",
        "lib/sub/invariants.yaml": sub,
        "lib/sub/props.py": "def prop_y(y):\n    return True\n",
        "lib/sub/m.py": "Y = 1\n",
        "a/BUILD": user,
    }
    for path, text in files.items():
        repo.write(path, text)
    return repo.commit("lib's gate, a matrix below it, and a")


@pytest.mark.parametrize(
    "path", ["lib/tests/test_core.py", "lib/props.py", "lib/seeds.jsonl", "lib/sub/m.py"]
)
@pytest.mark.parametrize(
    ("names_lib", "user"), [(True, USER), (False, USER.replace('["//lib:l"]', "[]"))]
)
def test_any_file_of_a_bazel_package_reaches_its_dependents_whatever_its_lane(
    repo: GitRepo, path: str, names_lib: bool, user: str
) -> None:
    """A test, oracle module or ledger of lib, or a file of the matrix package lib/sub,
    is an input of //lib:l (Bazel: rdeps(//..., //lib:<path>) holds //a:a when a names
    //lib:l); the honest neighbour: an a that names nothing is not selected."""
    base = _gated_lib_repo(repo, user)
    repo.append(path, "\n# edited\n")
    assert (("a", "all") in _selected(repo, base, f"edit {path}")) is names_lib


@pytest.mark.parametrize(
    ("actual", "reaches_a"), [("//lib:l", True), ("@//lib:l", True), ("//other:o", False)]
)
def test_a_label_of_the_external_package_names_what_the_workspace_binds(
    repo: GitRepo, actual: str, reaches_a: bool
) -> None:
    """bind(name = "x", actual = ...) in WORKSPACE: //external:x is ``actual`` (Bazel 4.2.3:
    rdeps(//..., //lib:all) holds //a:a through //external:x)."""
    files = {
        "WORKSPACE": f'bind(name = "x", actual = "{actual}")\n',
        "lib/BUILD": GLOBBED,
        "lib/f.txt": "1\n",
        "other/BUILD": 'filegroup(name = "o", visibility = ["//visibility:public"])\n',
        "a/BUILD": USER.replace("//lib:l", "//external:x"),
    }
    for path, text in files.items():
        repo.write(path, text)
    base = repo.commit("a names //external:x")
    repo.write("lib/f.txt", "2\n")
    assert (("a", "all") in _selected(repo, base, "edit lib")) is reaches_a


def _select_after_editing_v(repo: GitRepo, workspace: str) -> Selection:
    """@v is third_party/v: a names @v//:x, b @rules_x//:y; the patch edits a file of @v."""
    files = {
        "WORKSPACE": workspace,
        "third_party/v/WORKSPACE": 'workspace(name = "v")\n',
        "third_party/v/BUILD": GLOBBED.replace('"l"', '"x"'),
        "third_party/v/f.txt": "1\n",
        "a/BUILD": USER.replace("//lib:l", "@v//:x"),
        "b/BUILD": USER.replace("//lib:l", "@rules_x//:y"),
    }
    for path, text in files.items():
        repo.write(path, text)
    base = repo.commit("a names @v, b @rules_x")
    repo.write("third_party/v/f.txt", "2\n")
    return stage(Request(repo.path, base, repo.commit("edit @v"), TODAY)).selection


HIDDEN_V = {
    "computed path": 'local_repository(name = "v", path = __workspace_dir__ + "/third_party/v")\n',
    "absolute path": 'local_repository(name = "v", path = "/src/mono/third_party/v")\n',
    "comprehension": '[local_repository(name = n, path = "third_party/v") for n in ["v"]]\n',
    "macro": 'load("//tools:repos.bzl", "repos")\nrepos()\n',
    "loaded path": 'load("//tools:repos.bzl", "V")\nlocal_repository(name = "v", path = V)\n',
}


@pytest.mark.parametrize("how", sorted(HIDDEN_V))
def test_a_repository_the_workspace_declares_out_of_sight_may_be_any_package(
    repo: GitRepo, how: str
) -> None:
    """@v is third_party/v in Bazel 4.2.3 (rdeps holds //a:a), however the WORKSPACE
    declares it; where this reader cannot tell, a label of @v names every package."""
    repo.write("tools/BUILD", "")
    repo.write(
        "tools/repos.bzl",
        'V = "third_party/v"\n\n'
        "def repos():\n"
        '    native.local_repository(name = "v", path = "third_party/v")\n',
    )
    selection = _select_after_editing_v(repo, HIDDEN_V[how])
    assert ("a", "all") in _rows(selection)
    assert selection.approximate


@pytest.mark.parametrize(
    "workspace",
    [
        'local_repository(name = "v", path = "third_party/v")\n',
        'load("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")\n'
        'local_repository(name = "v", path = "./third_party/v/")\n'
        'http_archive(name = "rules_x", urls = ["https://example.com/x.zip"])\n',
    ],
)
def test_a_plainly_declared_repository_is_exact(repo: GitRepo, workspace: str) -> None:
    """The honest neighbour: @v is read where it is; @rules_x is outside the tree."""
    selection = _select_after_editing_v(repo, workspace)
    assert _rows(selection) == {("a", "all")}
    assert selection.approximate == ()


@pytest.mark.parametrize(("label", "reaches_a"), [("//lib:l", True), ("//other:o", False)])
def test_a_bumped_git_submodule_changes_every_package_inside_it(
    repo: GitRepo, label: str, reaches_a: bool
) -> None:
    """lib is a git submodule: the tree holds its commit, not its BUILD file, so a bump
    may change any package in it (Bazel 4.2.3, checked out: rdeps holds //a:a)."""
    inner = GitRepo.init(repo.path / "lib")
    inner.write("BUILD", GLOBBED)
    inner.write("f.txt", "1\n")
    first = inner.commit("one")
    inner.write("f.txt", "2\n")
    inner.commit("two")
    inner.git("checkout", "-q", first)
    repo.write("WORKSPACE", "")
    repo.write("other/BUILD", 'filegroup(name = "o", visibility = ["//visibility:public"])\n')
    repo.write("a/BUILD", USER.replace("//lib:l", label))
    base = repo.commit("lib is a submodule at its first commit")
    inner.git("checkout", "-q", "-")
    assert (("a", "all") in _selected(repo, base, "bump lib")) is reaches_a


def test_a_workspace_below_the_git_root_resolves_its_labels_inside_it(repo: GitRepo) -> None:
    """No WORKSPACE at the root: Bazel runs in ws/, where //lib:l is ws/lib (rdeps holds
    //a:a). The honest neighbour ws/b names ws/other."""
    files = {
        "ws/WORKSPACE": "",
        "ws/lib/BUILD": GLOBBED,
        "ws/lib/f.txt": "1\n",
        "ws/other/BUILD": 'filegroup(name = "o", visibility = ["//visibility:public"])\n',
        "ws/a/BUILD": USER,
        "ws/b/BUILD": USER.replace("//lib:l", "//other:o"),
        "lib/BUILD": GLOBBED,
    }
    for path, text in files.items():
        repo.write(path, text)
    base = repo.commit("a Bazel workspace in ws/")
    repo.write("ws/lib/f.txt", "2\n")
    assert _selected(repo, base, "edit ws/lib") == {("ws/a", "all")}
