"""Doctest examples are tests where pytest runs them (``--doctest-modules``): a patch that
changes or drops one moves the oracle; one that adds, rewords or moves them does not."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Verdict
from oracle_gate.report import Report

MERGE = "libs/intervals/intervals/__init__.py"
CORE = "libs/intervals/intervals/_core.py"
DOCSTRING = '    """Merge ranges that overlap; ranges that only touch ([0, 2], [2, 4]) stay apart.'
EXAMPLE = (
    f"{DOCSTRING}\n\n"
    "    >>> merge_ranges([[0, 2], [2, 4]])\n"
    "    [[0, 2], [2, 4]]\n"
    "    >>> merge_ranges([[0, 4], [3, 7]])\n"
    "    [[0, 7]]\n"
)
PYTEST_INI = "[pytest]\naddopts = --doctest-modules\n"


def _base(repo: GitRepo, config: str = "libs/intervals/pytest.ini") -> str:
    """The example monorepo whose merge_ranges documents two examples, and ``config``
    turning doctests on."""
    repo.replace(MERGE, DOCSTRING, EXAMPLE)
    repo.write(config, PYTEST_INI)
    return repo.commit("doctests")


def _moved(report: Report) -> list[str]:
    return [f.reason for f in report.findings if "doctest examples" in f.reason]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("    [[0, 7]]\n", "    [[0, 4], [3, 7]]\n"),  # the expected output edited
        ("[[0, 4], [3, 7]])\n", "[[0, 4], [3, 7]])  # doctest: +SKIP\n"),  # skipped
        ("    >>> merge_ranges([[0, 4], [3, 7]])\n    [[0, 7]]\n", ""),  # dropped
        ("    >>> merge_ranges([[0, 4], [3, 7]])\n", "    merge_ranges([[0, 4], [3, 7]])\n"),
    ],
)
def test_an_edited_example_is_an_oracle_move(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, _ = example_repo
    base = _base(repo)
    repo.replace(MERGE, old, new)
    report = repo.judge_paths(base, repo.commit("edit the example"))
    assert report.verdict is Verdict.REJECT
    (moved,) = _moved(report)
    assert moved.startswith(
        "doctest examples removed or changed (pytest runs them: --doctest-modules): "
    )
    assert "merge_ranges([[0, 4], [3, 7]])" in moved and moved.endswith(
        "with no human note (ORACLE_CHANGELOG.md entry or Oracle-Change trailer)"
    )


@pytest.mark.parametrize(
    "tail",
    [
        "\n\nmerge_ranges.__doc__ = None\n",
        "\n\ndel merge_ranges.__doc__\n",
        "\n\nsetattr(merge_ranges, '__doc__', '')\n",
    ],
)
def test_a_docstring_hidden_at_run_time_is_an_oracle_move(
    example_repo: tuple[GitRepo, str], tail: str
) -> None:
    """The source keeps its examples; pytest reads ``__doc__`` and finds none to run."""
    repo, _ = example_repo
    base = _base(repo)
    repo.append(MERGE, tail)
    report = repo.judge_paths(base, repo.commit("hide the examples"))
    assert report.verdict is Verdict.REJECT


def test_a_noted_edit_is_human_noted(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    base = _base(repo)
    repo.replace(MERGE, "    [[0, 7]]\n", "    [[0, 4], [3, 7]]\n")
    repo.note("libs/intervals", base, "intervals/__init__.py")
    report = repo.judge_paths(base, repo.commit("edit the example, noted"))
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]
    (noted,) = [f for f in report.findings if "doctest examples" in f.reason]
    assert noted.verdict is Verdict.HUMAN_NOTED and noted.owners == ("@intervals-team",)


@pytest.mark.parametrize(
    "config", ["pytest.ini", "libs/pyproject.toml", "libs/intervals/tox.ini", "libs/pytest.toml"]
)
def test_a_configuration_at_the_package_or_above_turns_doctests_on(
    example_repo: tuple[GitRepo, str], config: str
) -> None:
    repo, _ = example_repo
    base = _base(repo, config)
    repo.replace(MERGE, "    [[0, 7]]\n", "    [[0, 4], [3, 7]]\n")
    assert _moved(repo.judge_paths(base, repo.commit("edit the example")))


def _moves_to_core(repo: GitRepo) -> None:
    """merge_ranges, docstring and all, moved to _core.py; the package re-exports it."""
    source = repo.read(MERGE)
    repo.write(CORE, source)
    repo.write(
        MERGE, '"""Merge overlapping ranges."""\n\nfrom intervals._core import merge_ranges\n'
    )


@pytest.mark.parametrize(
    "edit",
    [
        lambda repo: repo.replace(
            MERGE, "[[0, 7]]\n", "[[0, 7]]\n    >>> merge_ranges([])\n    []\n"
        ),
        lambda repo: repo.replace(MERGE, "that overlap;", "that share a point;"),
        lambda repo: repo.replace(MERGE, "    merged = []\n", "    merged: list = []\n"),
        lambda repo: repo.append(MERGE, "\n\nDOC = merge_ranges.__doc__\n"),
        lambda repo: repo.append(MERGE, "\n\nNAMES = sorted(globals())\n"),
        _moves_to_core,
    ],
    ids=[
        "example added",
        "prose reworded",
        "code edited",
        "docstring read",
        "globals read",
        "moved",
    ],
)
def test_honest_edits_around_examples_pass(
    example_repo: tuple[GitRepo, str], edit: Callable[[GitRepo], None]
) -> None:
    repo, _ = example_repo
    base = _base(repo)
    edit(repo)
    report = repo.judge_paths(base, repo.commit("honest"))
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


def test_without_doctests_in_the_configuration_examples_are_prose(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    base = _base(repo, "libs/intervals/notes.txt")
    repo.replace(MERGE, "    [[0, 7]]\n", "    [[0, 4], [3, 7]]\n")
    report = repo.judge_paths(base, repo.commit("edit the example"))
    assert not _moved(report)


QUIET = "def _quiet(f):\n    return lambda ranges: f(ranges)\n\n\n"
DEF = "def merge_ranges(ranges):\n"


def _decorated(decorator: str, prelude: str = "") -> Callable[[GitRepo], None]:
    """merge_ranges given ``decorator``, with ``prelude`` (imports, helpers) before it."""

    def edit(repo: GitRepo) -> None:
        repo.replace(MERGE, DEF, f"{prelude}@{decorator}\n{DEF}")

    return edit


@pytest.mark.parametrize(
    "edit",
    [
        _decorated("_quiet", QUIET),
        _decorated("functools.partial", "import functools\n\n\n"),
        # A name that looks like a keeper but is the patch's own.
        _decorated("cache", "cache = lambda f: lambda ranges: f(ranges)\n\n\n"),
        _decorated("property", "property = lambda f: None\n\n\n"),
        lambda repo: repo.append(MERGE, "\n\n" + QUIET + "merge_ranges = _quiet(merge_ranges)\n"),
        # Rebound by a name the code computes.
        lambda repo: repo.append(
            MERGE, "\n\n" + QUIET + "globals()['merge_' + 'ranges'] = _quiet(merge_ranges)\n"
        ),
        lambda repo: repo.append(
            MERGE,
            "\n\nimport sys\n\n\n"
            + QUIET
            + "setattr(sys.modules[__name__], 'merge_ranges', _quiet(merge_ranges))\n",
        ),
    ],
    ids=[
        "own decorator",
        "partial",
        "shadowed cache",
        "shadowed property",
        "rebound",
        "through globals()",
        "setattr on the module",
    ],
)
def test_examples_hidden_behind_a_wrapper_are_an_oracle_move(
    example_repo: tuple[GitRepo, str], edit: Callable[[GitRepo], None]
) -> None:
    """pytest collects the examples of the object the module's name holds: a wrapper
    without the docstring has none, though the source keeps them."""
    repo, _ = example_repo
    base = _base(repo)
    edit(repo)
    report = repo.judge_paths(base, repo.commit("wrap the documented function"))
    assert report.verdict is Verdict.REJECT
    assert any("wrapped or rebound where pytest looks" in f.reason for f in report.findings)


@pytest.mark.parametrize(
    "edit",
    [
        _decorated("functools.cache", "import functools\n\n\n"),
        _decorated("functools.lru_cache(maxsize=None)", "import functools\n\n\n"),
        _decorated("cache", "from functools import cache\n\n\n"),
    ],
    ids=["functools.cache", "lru_cache()", "imported cache"],
)
def test_a_decorator_that_keeps_the_docstring_passes(
    example_repo: tuple[GitRepo, str], edit: Callable[[GitRepo], None]
) -> None:
    repo, _ = example_repo
    base = _base(repo)
    edit(repo)
    report = repo.judge_paths(base, repo.commit("cache the documented function"))
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


GUIDE = "libs/intervals/docs/guide.md"
GUIDE_TEXT = (
    "# Merging\n\n"
    "    >>> from intervals import merge_ranges\n"
    "    >>> merge_ranges([[0, 4], [3, 7]])\n"
    "    [[0, 7]]\n"
)
GLOB_INI = "[pytest]\naddopts = --doctest-glob='*.md'\n"


def _text_base(repo: GitRepo, path: str, config: str | None) -> str:
    """A text file of examples, and a configuration naming it a doctest (or none)."""
    repo.write(path, GUIDE_TEXT)
    if config is not None:
        repo.write("libs/pytest.ini", config)
    return repo.commit("a text file pytest runs as a doctest")


@pytest.mark.parametrize(
    ("path", "config"),
    [
        (GUIDE, GLOB_INI),
        (GUIDE, '[tool.pytest.ini_options]\naddopts = ["--doctest-glob=guide.md"]\n'),
        ("libs/intervals/docs/test_usage.txt", None),  # pytest's default pattern
    ],
)
@pytest.mark.parametrize(
    "edit",
    [
        lambda repo, path: repo.replace(path, "    [[0, 7]]\n", "    [[0, 4], [3, 7]]\n"),
        lambda repo, path: repo.replace(path, "    >>> merge", "    merge"),
        lambda repo, path: repo.remove(path),
        lambda repo, path: (repo.write(path + ".bak", repo.read(path)), repo.remove(path)),
    ],
    ids=["output edited", "turned into prose", "deleted", "renamed away"],
)
def test_a_text_file_pytest_runs_as_a_doctest_is_an_oracle(
    example_repo: tuple[GitRepo, str],
    path: str,
    config: str | None,
    edit: Callable[[GitRepo, str], None],
) -> None:
    repo, _ = example_repo
    if config is not None and config.startswith("[tool"):
        repo.write("libs/pyproject.toml", config)
        config = None
    base = _text_base(repo, path, config)
    edit(repo, path)
    report = repo.judge_paths(base, repo.commit("edit the examples"))
    assert report.verdict is Verdict.REJECT, [f.reason for f in report.findings]
    assert any("as a doctest" in f.reason for f in report.findings)


@pytest.mark.parametrize(
    ("config", "edit"),
    [
        # Prose and new examples around the existing ones.
        (GLOB_INI, lambda repo: repo.replace(GUIDE, "# Merging\n", "# Merging ranges\n\nText.\n")),
        (GLOB_INI, lambda repo: repo.append(GUIDE, "\n    >>> merge_ranges([])\n    []\n")),
        # Without the option, a Markdown file's examples are prose.
        (None, lambda repo: repo.replace(GUIDE, "    [[0, 7]]\n", "    [[0, 8]]\n")),
        ("[pytest]\naddopts = --doctest-glob=*.rst\n", lambda repo: repo.remove(GUIDE)),
    ],
    ids=["prose", "example added", "no option", "another pattern"],
)
def test_honest_edits_of_doctest_text_files_pass(
    example_repo: tuple[GitRepo, str], config: str | None, edit: Callable[[GitRepo], None]
) -> None:
    repo, _ = example_repo
    base = _text_base(repo, GUIDE, config)
    edit(repo)
    report = repo.judge_paths(base, repo.commit("honest"))
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]
