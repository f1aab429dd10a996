"""What a BUILD file may make the gate build or run, the same under both backends.

Each bomb is a patch of ``a/BUILD`` on a parent whose BUILD file is an honest
neighbour: the same code at a size a BUILD file may have, whose edge exists only if
it was evaluated exactly. ``select`` on the bomb must exit 2 with one line naming the
file and line (``docs/selection.md``, "Limits"), never abort, panic or crash, and
stay small; the native evaluator and the static reader say the same thing.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import _native, needs_native
from gitrepo import GitRepo, run_measured
from oracle_gate.bazel.limits import nesting_problem

# The edge to helpers only if the condition holds, else one to other: a reader that
# could not evaluate it takes both.
FG = 'filegroup(name = "a", srcs = ["//helpers:h"] if {condition} else ["//other:o"])\n'
IMPLS = [pytest.param("native", marks=needs_native), "python"]


def _commit(repo: GitRepo, build: str, message: str) -> str:
    repo.write("WORKSPACE", "")
    repo.write("helpers/BUILD", 'filegroup(name = "h", srcs = [])\n')
    repo.write("other/BUILD", 'filegroup(name = "o", srcs = [])\n')
    repo.write("a/BUILD", build)
    return repo.commit(message)


def _select(repo: GitRepo, impl: str, base: str, head: str) -> tuple[int, str, str, int]:
    """``select`` from ``base`` to ``head``: its exit code, stdout, stderr, peak KiB."""
    done, peak = run_measured(
        "select",
        "--repo",
        str(repo.path),
        "--base",
        base,
        "--head",
        head,
        env={**os.environ, "ORACLE_GATE_IMPL": impl},
    )
    return done.returncode, done.stdout, done.stderr, peak


def _affected(repo: GitRepo, impl: str, base: str, path: str) -> str:
    """What ``select`` says of a change of ``path`` alone on top of ``base``."""
    repo.git("checkout", "-q", base)
    repo.write(path, "x\n")
    code, out, err, _ = _select(repo, impl, base, repo.commit(f"edit {path}"))
    assert code == 0, err
    return out.splitlines()[0]


def _bomb(repo: GitRepo, impl: str, honest: str, bomb: str, exact: bool = True) -> str:
    """The honest neighbour evaluates (``exact``: to its one edge, to helpers, not other);
    returns the bomb's error, one line."""
    base = _commit(repo, honest, "honest neighbour")
    helpers = _affected(repo, impl, base, "helpers/h.txt")
    assert helpers.endswith("; 2 Bazel/matrix package(s) affected"), helpers
    other = _affected(repo, impl, base, "other/o.txt")
    if exact:
        assert other.endswith("; 1 Bazel/matrix package(s) affected"), other
    repo.git("checkout", "-q", base)
    head = _commit(repo, bomb, "bomb")
    code, _, err, peak = _select(repo, impl, base, head)
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert peak < 1536 * 1024, peak  # the bomb never built what it asked for
    return err


@pytest.mark.parametrize("impl", IMPLS)
def test_a_replace_that_would_square_a_string_stops_before_building_it(
    repo: GitRepo, impl: str
) -> None:
    body = 'S = "x" * {n}\nX = S.replace("x", S)\n'
    honest = body.format(n=1000) + FG.format(condition="len(X) == 1000000")
    err = _bomb(repo, impl, honest, body.format(n=100000) + FG.format(condition="X"))
    assert err == (
        "oracle-gate: error: a/BUILD:2: Starlark evaluation stopped building a string of "
        "10000000000 characters, more than the 16777216 one value may hold\n"
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_a_string_doubled_past_the_limit_stops_at_the_doubling_that_passes_it(
    repo: GitRepo, impl: str
) -> None:
    def doubled(times: int) -> str:
        return 'S = "x"\n' + "S = S + S\n" * times

    honest = doubled(20) + FG.format(condition="len(S) == 1048576")
    err = _bomb(repo, impl, honest, doubled(40) + FG.format(condition="S"))
    assert err == (
        "oracle-gate: error: a/BUILD:26: Starlark evaluation stopped building a string of "
        "33554432 characters, more than the 16777216 one value may hold\n"
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_an_integer_squared_past_the_limit_stops(repo: GitRepo, impl: str) -> None:
    def squared(times: int) -> str:
        return "N = 10\n" + "N = N * N\n" * times

    honest = squared(8) + FG.format(condition="len(str(N)) == 257")
    err = _bomb(repo, impl, honest, squared(20) + FG.format(condition="N"))
    assert err == (
        "oracle-gate: error: a/BUILD:14: Starlark evaluation stopped building an integer of "
        "8193 digits, more than the 4300 one value may hold\n"
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_brackets_nested_past_the_limit_are_not_parsed(repo: GitRepo, impl: str) -> None:
    # The honest neighbour: a 90-deep literal and a generated 1,500-term addition.
    deep = "[" * 90 + '"//helpers:h"' + "]" * 90
    chain = " + ".join(["[]"] * 1500)
    honest = f"D = {deep}\nC = {chain}\n" + FG.format(condition="len(D) == 1 and len(C) == 0")
    bomb = "X = " + "[" * 50000 + "]" * 50000 + "\n" + FG.format(condition="X")
    err = _bomb(repo, impl, honest, bomb)
    assert err == (
        "oracle-gate: error: a/BUILD:1: BUILD file is nested too deeply: more than 200 "
        "brackets open at once, the most Python's parser reads; give inner parts names of "
        "their own\n"
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_a_comprehension_of_ten_billion_iterations_stops(repo: GitRepo, impl: str) -> None:
    body = "X = [i for i in range({n}) for j in range({n}) if j < 1]\n"
    honest = body.format(n=1000) + FG.format(condition="len(X) == 1000")
    # The static reader evaluates a comprehension once: its length is not known there.
    exact = impl == "native"
    err = _bomb(repo, impl, honest, body.format(n=100000) + FG.format(condition="X"), exact)
    assert err == (
        "oracle-gate: error: a/BUILD:1: Starlark evaluation stopped after 100000000 steps "
        "evaluating a/BUILD, as long as Bazel would spend on it\n"
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_a_comprehension_that_keeps_every_item_stops_too(repo: GitRepo, impl: str) -> None:
    """Kept, its items fill the memory natively before the steps run out; the static
    reader, which lists none, stops on the steps: the same verdict, line and file."""
    body = "X = [1 for i in range({n}) for j in range({n})]\n"
    honest = body.format(n=1000) + FG.format(condition="len(X) == 1000000")
    exact = impl == "native"
    err = _bomb(repo, impl, honest, body.format(n=100000) + FG.format(condition="X"), exact)
    assert err.startswith("oracle-gate: error: a/BUILD:1: Starlark evaluation stopped after ")
    assert err.endswith(
        " evaluating a/BUILD, as long as Bazel would spend on it\n"
    ) or err.endswith(" evaluating a/BUILD, more than any BUILD file needs\n"), err


@pytest.mark.parametrize("impl", IMPLS)
def test_a_value_nested_past_the_limit_stops_where_a_rule_is_given_it(
    repo: GitRepo, impl: str
) -> None:
    level = "[" * 60 + "{inner}" + "]" * 60
    outer = level.format(inner="A")
    honest = f"A = {level.format(inner=1)}\nB = {outer}\n" + FG.format(condition="len(A) == 1")
    bomb = f"A = {level.format(inner=1)}\nB = {outer}\nfilegroup(name = 'a', srcs = B)\n"
    err = _bomb(repo, impl, honest, bomb)
    assert err == (
        "oracle-gate: error: a/BUILD:3: Starlark evaluation stopped at a value nested more "
        "than 100 levels deep, more than any BUILD file needs\n"
    )


def _looping_macro(body: str) -> dict[str, str]:
    """A macro that runs ``body``, which builds ``v``, and gives ``v`` to its rule."""
    return {
        "tools/BUILD": "",
        "tools/defs.bzl": f"def grp(name):\n{body}"
        '    native.filegroup(name = name, srcs = ["//helpers:h"], tags = [v])\n',
    }


@needs_native
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "    v = []\n    for i in range({n}):\n        v = [v]\n",
            "tools/defs.bzl:5: Starlark evaluation stopped at a value nested more than 100 "
            "levels deep, more than any BUILD file needs",
        ),
        (
            '    v = "x"\n    for i in range({n}):\n        v += v\n',
            "tools/defs.bzl:4: Starlark evaluation stopped building a string of 33554432 "
            "characters",
        ),
    ],
    ids=["nested_in_a_loop", "doubled_in_a_loop"],
)
def test_a_macro_that_grows_a_value_in_a_loop_stops_natively(
    repo: GitRepo, body: str, message: str
) -> None:
    """Only the native evaluator runs macros (the static reader takes every label the
    .bzl file names): a value a loop nests two million deep, given to a rule, crashed
    it; a string a loop doubles aborted it."""
    for path, text in _looping_macro(body.format(n=10)).items():
        repo.write(path, text)
    base = _commit(repo, 'load("//tools:defs.bzl", "grp")\ngrp(name = "a")\n', "honest")
    code, _, err, _ = _select(repo, "native", base, base)
    assert code == 0, err
    for path, text in _looping_macro(body.format(n=2000000)).items():
        repo.write(path, text)
    head = repo.commit("bomb")
    code, _, err, peak = _select(repo, "native", base, head)
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"oracle-gate: error: {message}"), err
    assert peak < 1536 * 1024, peak


# Pieces of Starlark source whose runs reach every limit of the nesting scan.
_PIECES = (
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "+",
    "-",
    " and ",
    ".x",
    "f()",
    "x[0]",
    ",",
    ";",
    "\n",
    "\n  ",
    "\n\t",
    "\n        ",
    "'((('",
    '"""\n(((\n"""',
    "#((\n",
    "\\\n",
    "1.5e+3",
    "é",
    "lambda: ",
    "not ",
    "x",
    "9" * 50,
    " if a else ",
)


@needs_native
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_PIECES), st.integers(1, 300)), max_size=10))
def test_both_scans_find_the_same_nesting_problem(runs: list[tuple[str, int]]) -> None:
    """The native evaluator and the static reader refuse the same files, at the same line."""
    text = "".join(piece * times for piece, times in runs)
    deep = nesting_problem(text)
    [(_, error, *_)] = _native.evaluate_build_files(
        [("a/BUILD", "a", "", text.encode())], [], [("", [])]
    )[3]
    if deep is None:
        assert "nested too deeply" not in error, error
    else:
        assert error == f"a/BUILD:{deep.line}: {deep.message('BUILD file')}"


@pytest.mark.parametrize("impl", IMPLS)
def test_a_bzl_file_nested_past_the_limit_is_refused_by_both_backends(
    repo: GitRepo, impl: str
) -> None:
    """The native evaluator would not parse it; the static reader, which only scans a
    .bzl file, refuses it all the same."""

    def loading(depth: int) -> str:
        repo.write("tools/BUILD", "")
        repo.write("tools/defs.bzl", "X = " + "[" * depth + "1" + "]" * depth + "\n")
        return _commit(repo, 'load("//tools:defs.bzl", "X")\nfilegroup(name = "a")\n', "load")

    base = loading(90)
    head = loading(250)
    code, _, err, _ = _select(repo, impl, base, head)
    assert code == 2, err
    assert err == (
        "oracle-gate: error: tools/defs.bzl:1: .bzl file is nested too deeply: more than 200 "
        "brackets open at once, the most Python's parser reads; give inner parts names of "
        "their own\n"
    )
    code, _, err, _ = _select(repo, impl, base, base)
    assert code == 0, err
