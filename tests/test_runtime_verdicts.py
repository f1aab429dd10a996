"""Runtime verdicts on ordinary layouts: re-exported symbols, a relation whose subject
raises on the parent, and oracle configuration mistakes as gate errors with file:line."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.errors import ConfigError
from oracle_gate.model import Verdict
from reports import reasons_of

PKG = "libs/intervals"
MERGE = f"{PKG}/intervals/__init__.py"


def _move_merge_to_a_submodule(repo: GitRepo, reexport: str) -> None:
    repo.write(f"{PKG}/intervals/merge.py", repo.read(MERGE))
    repo.write(MERGE, f'"""Merge overlapping closed integer ranges."""\n\n{reexport}')


@pytest.mark.parametrize(
    "reexport",
    [
        "from .merge import merge_ranges\n",
        "from .merge import *\n",
        "from . import merge as _m\n\nmerge_ranges = _m.merge_ranges\n__all__ = ['merge_ranges']\n",
    ],
)
def test_a_reexported_assumption_symbol_resolves(
    example_repo: tuple[GitRepo, str], reexport: str
) -> None:
    repo, base = example_repo
    _move_merge_to_a_submodule(repo, reexport)
    report = repo.gate(base, repo.commit("move merge_ranges to a submodule"))
    assert "which the head tree does not define" not in reasons_of(report)
    assert report.verdict is Verdict.PASS, reasons_of(report)


def test_an_assumption_symbol_that_no_import_reaches_is_still_flagged(
    example_repo: tuple[GitRepo, str],
) -> None:
    """The cheating neighbour: the function moved, nothing re-exports it."""
    repo, base = example_repo
    _move_merge_to_a_submodule(repo, "from .merge import merge_ranges as merge\n")
    repo.replace(f"{PKG}/partitions.py", "intervals:merge_ranges", "intervals:merge")
    repo.replace(f"{PKG}/relations.py", "intervals:merge_ranges", "intervals:merge")
    repo.note(PKG, base, "partitions.py", "relations.py")
    reasons = reasons_of(repo.gate(base, repo.commit("rename"), replay=False))
    assert "cites intervals.merge_ranges, which the head tree does not define" in reasons


def _relation_package(repo: GitRepo, body: str) -> str:
    repo.write(
        "pkg/invariants.yaml",
        'version: 1\nrows:\n  - id: r\n    globs: ["mod.py"]\n'
        '    relations: ["relations.py:RELATIONS"]\n',
    )
    repo.write("pkg/mod.py", f"def half(x):\n{body}")
    repo.write(
        "pkg/relations.py",
        'SUBJECT = "mod:half"\nRELATIONS = [{"id": "R_half", "inputs": [4, 3], '
        '"transform": None, "compare": lambda out, x: out * 2 == x}]\n',
    )
    return repo.commit("relation package")


def test_callable_compare_whose_subject_raises_on_the_parent_is_preexisting(
    repo: GitRepo,
) -> None:
    base = _relation_package(
        repo, "    if x % 2:\n        raise ValueError(x)\n    return x // 2\n"
    )
    repo.replace("pkg/mod.py", "return x // 2", "return x >> 1")
    report = repo.gate(base, repo.commit("shift"))
    assert "relation R_half fails on parent too (1 of 2 inputs)" in reasons_of(
        report, Verdict.PREEXISTING
    )
    assert report.verdict is Verdict.PASS


def test_callable_compare_whose_subject_starts_raising_on_the_head_regresses(
    repo: GitRepo,
) -> None:
    base = _relation_package(repo, "    return x / 2\n")
    repo.replace(
        "pkg/mod.py", "return x / 2", "if x % 2:\n        raise ValueError(x)\n    return x / 2"
    )
    reasons = reasons_of(repo.gate(base, repo.commit("odd raises"), replay=False))
    assert "relation R_half regress: holds on parent, fails on head for 1 of 2 inputs" in reasons


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("invariants.yaml", '"props.py:prop_idempotent"', '"props.py:prop_idempotnet"'),
            "libs/intervals/invariants.yaml:9: props.py:prop_idempotnet: props.py defines no",
        ),
        (
            ("props.py", "prop_idempotent.strategy = _RANGES\n", ""),
            "libs/intervals/props.py:9: property prop_idempotent has no .strategy attribute",
        ),
        (
            ("partitions.py", 'SUBJECT = "intervals:merge_ranges"\n', ""),
            "libs/intervals/partitions.py:4: partitions.py sets no SUBJECT",
        ),
    ],
)
def test_oracle_configuration_mistakes_are_gate_errors_naming_file_and_line(
    example_repo: tuple[GitRepo, str], edit: tuple[str, str, str], message: str
) -> None:
    repo, base = example_repo
    file, old, new = edit
    repo.replace(f"{PKG}/{file}", old, new)
    repo.replace(MERGE, "merged = []", "merged = []  # output")
    head = repo.commit("oracle mistake")
    with pytest.raises(ConfigError) as error:
        repo.gate(base, head)
    assert str(error.value).startswith(message)


def test_a_failed_oracle_run_names_a_file_never_a_glob(repo: GitRepo) -> None:
    base = _relation_package(repo, "    return x / 2\n")
    repo.write("pkg/mod.py", "import sys\nsys.exit(3)\n")
    report = repo.gate(base, repo.commit("exit on import"))
    paths = {f.path for f in report.findings if f.verdict is Verdict.REJECT}
    assert paths == {"pkg/invariants.yaml"}
    assert "row r: oracle run failed" in reasons_of(report)
