"""SPEC §4: assertion surface moves, weakening markers, and agent-added tests."""

from __future__ import annotations

import re

import pytest

from fixture_cases import FIXTURES, Case, read_cases
from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict

PKG = "libs/intervals"
TEST = f"{PKG}/tests/test_merge.py"
TOUCHING = "assert merge_ranges([[0, 2], [2, 4]]) == [[0, 2], [2, 4]]"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (TOUCHING, "assert merge_ranges([[0, 2], [2, 4]]) == [[0, 2], [2, 5]]"),  # literal
        (TOUCHING, "assert merge_ranges([[0, 2], [2, 4]]) != [[0, 2], [2, 4]]"),  # operator
        (TOUCHING, "pass"),  # assert deleted
        ("pytest.raises(ValueError", "pytest.raises(Exception"),  # raises type
        ('match="inverted"', 'match="inv"'),  # raises argument
        ("def test_overlapping_ranges_merge():", "def test_overlapping_ranges_merge(tmp_path):"),
        ("def test_empty_input_gives_empty_output", "def test_empty_input_is_fine"),  # renamed
    ],
)
def test_assertion_surface_change_without_note_is_rejected(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, base = example_repo
    repo.replace(TEST, old, new)
    report = repo.judge_paths(base, repo.commit("edit test"))
    assert report.verdict_of(TEST) is Verdict.REJECT
    assert any("assertion surface moved" in f.reason for f in report.findings)


def test_assertion_change_with_note_is_human_noted(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(TEST, TOUCHING, TOUCHING.replace("[2, 4]]", "[2, 4]] and True"))
    repo.relock(PKG)
    repo.note(PKG, base, "tests/test_merge.py", "oracle_gate.lock")
    report = repo.gate(base, repo.commit("reviewed test edit"))
    assert report.verdict_of(TEST) is Verdict.HUMAN_NOTED
    assert report.verdict is Verdict.PASS


def test_formatting_comments_and_docstrings_in_tests_pass(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(TEST, TOUCHING, f"# touching ranges\n    {TOUCHING.replace('==', ' == ')}  # why")
    repo.replace(
        TEST,
        "def test_empty_input_gives_empty_output():\n",
        'def test_empty_input_gives_empty_output():\n    """Empty in, empty out."""\n',
    )
    report = repo.gate(base, repo.commit("format tests"))
    assert report.verdict is Verdict.PASS
    assert report.verdict_of(TEST) is Verdict.PASS


def test_test_file_renamed_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.git("mv", TEST, f"{PKG}/tests/test_merge_ranges.py")
    report = repo.judge_paths(base, repo.commit("rename test file"))
    assert report.verdict_of(f"{PKG}/tests/test_merge_ranges.py") is Verdict.REJECT


def test_test_file_deleted_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.remove(TEST)
    assert repo.judge_paths(base, repo.commit("drop tests")).verdict_of(TEST) is Verdict.REJECT


def test_assert_moved_into_a_helper_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(TEST, f"    {TOUCHING}\n", "    _check_touching()\n")
    repo.append(TEST, f"\n\ndef _check_touching():\n    {TOUCHING}\n")
    report = repo.judge_paths(base, repo.commit("refactor assert into helper"))
    assert report.verdict_of(TEST) is Verdict.REJECT


def test_same_names_with_weaker_asserts_are_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(
        TEST,
        "assert merge_ranges([[0, 4], [3, 7]]) == [[0, 7]]",
        "assert merge_ranges([[0, 4], [3, 7]])",
    )
    repo.replace(TEST, TOUCHING, "assert isinstance(merge_ranges([[0, 2], [2, 4]]), list)")
    report = repo.judge_paths(base, repo.commit("weaker asserts, same names"))
    assert report.verdict_of(TEST) is Verdict.REJECT


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("\ndef test_touching", '\n@pytest.mark.skip(reason="flaky")\ndef test_touching'),
        ("\ndef test_touching", "\n@pytest.mark.xfail\ndef test_touching"),
        ("\ndef test_touching", "\n@pytest.mark.skipif(True, reason='x')\ndef test_touching"),
        (f"    {TOUCHING}", f"    pytest.skip('later')\n    {TOUCHING}"),
        (f"    {TOUCHING}", f"    assert True\n    {TOUCHING}"),
        (f"    {TOUCHING}", f"    __import__('time').sleep(0.1)\n    {TOUCHING}"),
    ],
)
def test_added_weakening_marker_without_triage_is_rejected(
    example_repo: tuple[GitRepo, str], old: str, new: str
) -> None:
    repo, base = example_repo
    repo.replace(TEST, old, new)
    report = repo.judge_paths(base, repo.commit("quiet a test"))
    assert report.verdict_of(TEST) is Verdict.REJECT


def test_added_skip_with_freeze_triage_trailer_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(
        TEST, "\ndef test_touching", '\n@pytest.mark.skip(reason="flaky")\ndef test_touching'
    )
    repo.relock(PKG)
    repo.note(PKG, base, "oracle_gate.lock")
    head = repo.commit("skip flaky test", {"Freeze-Triage": "grace@example.com"})
    report = repo.gate(base, head)
    assert report.verdict_of(TEST) is Verdict.HUMAN_NOTED
    assert report.verdict is Verdict.PASS


def test_skip_mentioned_only_in_a_comment_is_not_a_marker(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(
        TEST,
        f"    {TOUCHING}",
        f"    # never skip this: time.sleep( would hide races\n    {TOUCHING}",
    )
    assert repo.gate(base, repo.commit("comment")).verdict is Verdict.PASS


def test_agent_added_test_file_is_ignored_as_oracle(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    added = f"{PKG}/tests/test_extra.py"
    repo.write(added, "def test_always():\n    assert True\n")
    report = repo.gate(base, repo.commit("agent test"))
    entry = next(p for p in report.paths if p.path == added)
    assert (entry.lane, entry.verdict) == (Lane.AGENT_TEST, Verdict.IGNORED_AS_ORACLE)
    assert report.verdict is Verdict.PASS  # the lock not knowing the new test is no drift


def test_agent_added_test_never_makes_a_rejected_patch_pass(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write(f"{PKG}/tests/test_extra.py", "def test_always():\n    assert True\n")
    repo.write(f"{PKG}/fast.py", "X = 1\n")  # unmeasured production code
    assert repo.gate(base, repo.commit("agent test + code"), replay=False).verdict is Verdict.REJECT


# ------------------------------------------------ issue 12: a test file is oracle as a whole module

RECORD = "record = json.loads((DATA / case).read_text())"
EMPTY = "    assert merge_ranges([]) == []\n"
CASE_IDS = 'sorted(p.name for p in DATA.glob("*.json"))'
AUTOUSE = (
    "\n\n@pytest.fixture(autouse=True)\ndef _fast(monkeypatch):\n"
    '    monkeypatch.setattr("intervals.merge_ranges", lambda r: r)\n'
)

# (old, new) replacements in test_merge.py, or (None, text) to append text.
BAD_EDITS = {
    # Statements in a test body that are not asserts.
    "empty parametrize table": (CASE_IDS, CASE_IDS + "[:0]"),
    "expected overwritten": (
        RECORD,
        RECORD + '\n    record["expected"] = merge_ranges(record["input"])',
    ),
    "early return": (EMPTY, "    return\n" + EMPTY),
    "if False around assert": (EMPTY, "    if False:\n    " + EMPTY),
    "swallowed AssertionError": (
        EMPTY,
        "    try:\n    " + EMPTY + "    except AssertionError:\n        pass\n",
    ),
    "suppress AssertionError": (
        EMPTY,
        "    with __import__('contextlib').suppress(AssertionError):\n    " + EMPTY,
    ),
    "subject swapped through globals": (
        EMPTY,
        "    globals()['merge_ranges'] = lambda r: r\n" + EMPTY,
    ),
    # Skips that do not spell skip.
    "raise SkipTest": (EMPTY, "    raise __import__('unittest').SkipTest('later')\n" + EMPTY),
    "getattr skip": (EMPTY, "    getattr(pytest, 'sk' 'ip')('later')\n" + EMPTY),
    "aliased sleep": (EMPTY, "    from time import sleep as pause\n    pause(0)\n" + EMPTY),
    "module-level importorskip": (None, "\npytest.importorskip('no_such_module')\n"),
    # Removing a test from collection without touching its unit.
    "test set to None": (None, "\ntest_touching_ranges_stay_apart = None\n"),
    "test deleted by name": (None, "\ndel test_touching_ranges_stay_apart\n"),
    "__test__ = False": (None, "\ntest_touching_ranges_stay_apart.__test__ = False\n"),
    "test wrapped": (
        None,
        "\n\ndef _quiet(f):\n    return lambda: None\n\n\n"
        "test_touching_ranges_stay_apart = _quiet(test_touching_ranges_stay_apart)\n",
    ),
    "test redefined below": (None, "\n\ndef test_touching_ranges_stay_apart():\n    pass\n"),
    "pytest_generate_tests hook": (
        None,
        "\n\ndef pytest_generate_tests(metafunc):\n    metafunc.parametrize('case', [])\n",
    ),
    "pytest_generate_tests bound by a match capture": (
        None,
        "\n\ndef _generate(metafunc):\n    metafunc.parametrize('case', [])\n\n\n"
        "match _generate:\n    case pytest_generate_tests:\n        pass\n",
    ),
    "pytest_generate_tests bound through global": (
        None,
        "\n\ndef _install():\n    global pytest_generate_tests\n"
        "    pytest_generate_tests = lambda metafunc: metafunc.parametrize('case', [])\n\n\n"
        "_install()\n",
    ),
    "module pytestmark": (None, "\npytestmark = pytest.mark.skip\n"),
    "module __test__ = False": (None, "\n__test__ = False\n"),
    # ``!=`` spelled ``<>``: what a comparison means changes under the existing tests
    "future that changes the language": (
        "import json\n",
        "from __future__ import annotations, barry_as_FLUFL\n\nimport json\n",
    ),
    # Module-level code the assertions depend on.
    "builtin shadowed": (None, "\n\ndef sorted(values, **kwargs):\n    return []\n"),
    "import retargeted": (
        "from intervals import merge_ranges",
        "from json import loads as merge_ranges",
    ),
    "subject rebound below": (None, "\nmerge_ranges = sorted\n"),
    "autouse fixture": (None, AUTOUSE),
    "setup_module": (
        None,
        "\n\ndef setup_module():\n    import intervals\n    intervals.merge_ranges = list\n",
    ),
    "pytest.raises patched": (None, "\npytest.raises = lambda *a, **k: open(__file__)\n"),
    "DATA redirected": (None, "\nDATA = pathlib.Path('/nonexistent')\n"),
    "new test whose decorator patches": (
        None,
        "\n\ndef _patched():\n    import intervals\n    intervals.merge_ranges = list\n"
        "    return lambda f: f\n\n\n@_patched()\ndef test_fresh_name():\n    assert True\n",
    ),
    "new test whose default patches": (
        None,
        "\n\ndef test_fresh_name(x=__import__('intervals').__dict__.update(merge_ranges=list)):\n"
        "    assert True\n",
    ),
    "new fixture shadowing a parameter": (
        None,
        "\n\n@pytest.fixture\ndef case():\n    return 'empty.json'\n",
    ),
    "star import": ("import json\n", "import json\nfrom os.path import *\n"),
    "new class with a metaclass": (
        None,
        "\n\nclass TestFresh(metaclass=type('M', (type,), {})):\n    def test_a(self):\n"
        "        assert True\n",
    ),
    "new class body patching": (
        None,
        "\n\nclass TestFresh:\n    pytest.raises = None\n\n"
        "    def test_a(self):\n        assert True\n",
    ),
}

HONEST_EDITS = {
    "annotations added": (
        "def test_recorded_cases(case):",
        "def test_recorded_cases(case: str) -> None:",
    ),
    "local annotated": (RECORD, RECORD.replace("record =", "record: dict =")),
    "local renamed": ("record", "rec"),
    "tests reordered": (
        "def test_empty_input_gives_empty_output():\n" + EMPTY + "\n\n",
        "",
    ),
    "imports sorted differently": (
        "import json\nimport pathlib\n",
        "import pathlib\nimport json\n",
    ),
    "comment and docstring": (
        EMPTY,
        '    """Nothing in, nothing out."""\n    # the trivial case\n' + EMPTY,
    ),
    "brand-new test": (
        None,
        "\n\ndef test_single_range_is_kept():\n    assert merge_ranges([[1, 2]]) == [[1, 2]]\n",
    ),
    "new parametrized test with its table": (
        None,
        "\n\nSINGLES = [[[1, 2]], [[3, 4]]]\n\n\n@pytest.mark.parametrize('ranges', SINGLES)\n"
        "def test_singles_are_kept(ranges):\n    assert merge_ranges(ranges) == ranges\n",
    ),
    "new fixture and test": (
        None,
        "\n\n@pytest.fixture\ndef single_range():\n    return [[1, 2]]\n\n\n"
        "def test_single_fixture(single_range):\n"
        "    assert merge_ranges(single_range) == single_range\n",
    ),
    "annotations postponed": (
        "import json\n",
        "from __future__ import annotations\n\nimport json\n",
    ),
    "__all__ and __version__": (None, "\n__all__ = ['test_cases']\n__version__ = '1'\n"),
    "new import and test": (
        "import json\n",
        "import itertools\nimport json\n",
    ),
    "new test class": (
        None,
        "\n\nclass TestSingles:\n    limit = 3\n\n    def test_kept(self):\n"
        "        assert merge_ranges([[1, self.limit]]) == [[1, self.limit]]\n",
    ),
}


def _apply(repo: GitRepo, edit: tuple[str | None, str]) -> None:
    old, new = edit
    if old is None:
        repo.append(TEST, new)
    elif old == "record":
        repo.write(TEST, re.sub(r"\brecord\b", new, repo.read(TEST)))
    else:
        repo.replace(TEST, old, new)


@pytest.mark.parametrize("name", sorted(BAD_EDITS))
def test_whole_module_evasions_are_rejected(example_repo: tuple[GitRepo, str], name: str) -> None:
    repo, base = example_repo
    _apply(repo, BAD_EDITS[name])
    report = repo.gate(base, repo.commit(name), replay=False)
    assert report.verdict_of(TEST) is Verdict.REJECT, [f.reason for f in report.findings]
    assert report.verdict is Verdict.REJECT


@pytest.mark.parametrize("name", sorted(HONEST_EDITS))
def test_whole_module_honest_edits_pass(example_repo: tuple[GitRepo, str], name: str) -> None:
    repo, base = example_repo
    _apply(repo, HONEST_EDITS[name])
    if name == "tests reordered":
        repo.append(TEST, "\n\ndef test_empty_input_gives_empty_output():\n" + EMPTY)
    report = repo.gate(base, repo.commit(name))
    assert report.verdict_of(TEST) is Verdict.PASS, [f.reason for f in report.findings]
    assert report.verdict is Verdict.PASS


CLASSES = f"{PKG}/tests/test_classes.py"
CLASSES_SOURCE = """\
import unittest
from math import isclose

import pytest
from intervals import merge_ranges
from intervals_checks import Checks

CASES = [([[0, 1]], [[0, 1]])]


class Span:
    def __init__(self, ranges):
        self.ranges = ranges

    def __eq__(self, other):
        return self.ranges == other.ranges


def spans(ranges):
    return Span(merge_ranges(ranges))


@pytest.fixture
def overlapping():
    return [[0, 4], [3, 7]]


def isclose(a, b):
    return abs(a - b) < 1e-9


@pytest.mark.parametrize(("given", "expected"), CASES)
def test_cases(given, expected):
    assert merge_ranges(given) == expected


def test_overlapping(overlapping):
    assert spans(overlapping) == Span([[0, 7]])
    assert isclose(len(overlapping), 2)


class TestMerge(unittest.TestCase):
    def test_touching(self):
        self.assertEqual(merge_ranges([[0, 2], [2, 4]]), [[0, 2], [2, 4]])


class TestInherited(Checks):
    pass
"""

CHECKS_SOURCE = """\
import unittest


class Checks(unittest.TestCase):
    def test_hidden_in_base(self):
        self.assertEqual(sorted([2, 1]), [1, 2])
"""

BAD_CLASS_EDITS = {
    "setUp added": (
        "class TestMerge(unittest.TestCase):\n",
        "class TestMerge(unittest.TestCase):\n    def setUp(self):\n        self.skipTest('x')\n\n",
    ),
    "__init__ added to a Test class": (
        "class TestMerge(unittest.TestCase):\n",
        "class TestMerge(unittest.TestCase):\n    def __init__(self, *a):\n        pass\n\n",
    ),
    "assertEqual overridden": (
        "class TestMerge(unittest.TestCase):\n",
        "class TestMerge(unittest.TestCase):\n    def assertEqual(self, *a):\n        pass\n\n",
    ),
    "helper __eq__ changed": (
        "return self.ranges == other.ranges",
        "return True",
    ),
    "helper function changed": ("return Span(merge_ranges(ranges))", "return Span([[0, 7]])"),
    "fixture body changed": ("return [[0, 4], [3, 7]]", "return [[0, 7]]"),
    "parametrize table mutated after definition": (
        "\n\nclass Span:",
        "\nCASES.clear()\n\n\nclass Span:",
    ),
    "parametrize table extended with nothing": (
        "\n\nclass Span:",
        "\nCASES += []\n\n\nclass Span:",
    ),
    "definition moved above the import it overrides": (
        "from math import isclose\n",
        "\n\ndef isclose(a, b):\n    return abs(a - b) < 1e-9\n\n\nfrom math import isclose\n",
    ),
    "inherited test overridden by a new method": (
        "class TestInherited(Checks):\n    pass\n",
        "class TestInherited(Checks):\n    pass\n\n    def test_hidden_in_base(self):\n"
        "        pass\n",
    ),
    "class attribute added to an existing class": (
        "class TestMerge(unittest.TestCase):\n",
        "class TestMerge(unittest.TestCase):\n    maxDiff = 0\n\n",
    ),
}

HONEST_CLASS_EDITS = {
    "test method added to an existing class": (
        "class TestMerge(unittest.TestCase):\n",
        "class TestMerge(unittest.TestCase):\n    def test_single(self):\n"
        "        self.assertEqual(merge_ranges([[1, 2]]), [[1, 2]])\n\n",
    ),
    "helper moved below its users": (
        "\n\ndef spans(ranges):\n    return Span(merge_ranges(ranges))\n",
        "",
    ),
}


@pytest.fixture
def class_repo(example_repo: tuple[GitRepo, str]) -> tuple[GitRepo, str]:
    repo, _ = example_repo
    repo.write(CLASSES, CLASSES_SOURCE)
    # The imported base class must exist: the trusted replay runs this file.
    repo.write(f"{PKG}/tests/intervals_checks.py", CHECKS_SOURCE)
    repo.relock(PKG)
    return repo, repo.commit("class-based tests")


@pytest.mark.parametrize("name", sorted(BAD_CLASS_EDITS))
def test_class_and_helper_evasions_are_rejected(class_repo: tuple[GitRepo, str], name: str) -> None:
    repo, base = class_repo
    old, new = BAD_CLASS_EDITS[name]
    if name == "definition moved above the import it overrides":
        repo.replace(CLASSES, "\n\ndef isclose(a, b):\n    return abs(a - b) < 1e-9\n", "")
    repo.replace(CLASSES, old, new)
    report = repo.gate(base, repo.commit(name), replay=False)
    assert report.verdict_of(CLASSES) is Verdict.REJECT, [f.reason for f in report.findings]


@pytest.mark.parametrize("name", sorted(HONEST_CLASS_EDITS))
def test_class_and_helper_honest_edits_pass(class_repo: tuple[GitRepo, str], name: str) -> None:
    repo, base = class_repo
    old, new = HONEST_CLASS_EDITS[name]
    repo.replace(CLASSES, old, new)
    if name == "helper moved below its users":
        repo.append(CLASSES, "\n\ndef spans(ranges):\n    return Span(merge_ranges(ranges))\n")
    report = repo.gate(base, repo.commit(name))
    assert report.verdict_of(CLASSES) is Verdict.PASS, [f.reason for f in report.findings]
    assert report.verdict is Verdict.PASS


# ------------------------------------------- cases appended to an existing parametrize table

TABLE = (
    "\n\n@pytest.mark.parametrize(\n    ('given', 'expected'),\n"
    "    [\n        ([[0, 1]], [[0, 1]]),\n        ([[0, 2], [1, 3]], [[0, 3]]),\n    ],\n)\n"
    "def test_table(given, expected):\n    assert merge_ranges(given) == expected\n"
)
LAST_CASE = "        ([[0, 2], [1, 3]], [[0, 3]]),\n"

# What the table's last line becomes: the parent's cases, then these.
APPENDED = {
    "a literal case": LAST_CASE + "        ([[5, 6]], [[5, 6]]),\n",
    "two cases": LAST_CASE + "        ([], []),\n        ([[1, 1]], [[1, 1]]),\n",
    "a named case": LAST_CASE + "        pytest.param([[2, 4]], [[2, 4]], id='single'),\n",
}
NOT_APPENDED = {
    # Weaker or fewer: a parent case changed, dropped, or reordered behind a new one.
    "a case changed": "        ([[0, 2], [1, 3]], [[0, 2], [1, 3]]),\n",
    "a case dropped": "",
    "a case inserted before": "        ([[9, 9]], [[9, 9]]),\n" + LAST_CASE,
    # Code run at import, or a mark that changes how cases report.
    "a case that runs code": LAST_CASE
    + "        (__import__('intervals').__dict__.update(merge_ranges=list), []),\n",
    "a case built by a call": LAST_CASE + "        (list(range(2)), [[0, 1]]),\n",
    "a case marked xfail": LAST_CASE
    + "        pytest.param([[0, 1]], [[7]], marks=pytest.mark.xfail),\n",
    "a case and a body change": LAST_CASE + "        ([[5, 6]], [[5, 6]]),\n",
}


def _table_repo(example_repo: tuple[GitRepo, str]) -> tuple[GitRepo, str]:
    repo, _ = example_repo
    repo.append(TEST, TABLE)
    repo.relock(PKG)
    return repo, repo.commit("a parametrized table, reviewed and locked")


def _extend_table(repo: GitRepo, last: str, relock: bool = True) -> None:
    repo.replace(TEST, LAST_CASE, last)
    if relock:
        repo.relock(PKG)


@pytest.mark.parametrize("name", sorted(APPENDED))
def test_cases_appended_to_a_parametrize_table_pass(
    example_repo: tuple[GitRepo, str], name: str
) -> None:
    repo, base = _table_repo(example_repo)
    _extend_table(repo, APPENDED[name])
    report = repo.gate(base, repo.commit(name))
    assert report.verdict_of(TEST) is Verdict.PASS, [f.reason for f in report.findings]
    assert "cases appended to" in next(f.reason for f in report.findings if f.path == TEST)
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


@pytest.mark.parametrize("name", sorted(NOT_APPENDED))
def test_a_parametrize_table_that_does_not_only_grow_is_rejected(
    example_repo: tuple[GitRepo, str], name: str
) -> None:
    repo, base = _table_repo(example_repo)
    _extend_table(repo, NOT_APPENDED[name])
    if name == "a case and a body change":
        repo.replace(TEST, "    assert merge_ranges(given) == expected", "    assert given")
        repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit(name))
    assert report.verdict_of(TEST) is Verdict.REJECT, [f.reason for f in report.findings]
    assert report.verdict is Verdict.REJECT


def test_cases_appended_without_relocking_are_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = _table_repo(example_repo)
    _extend_table(repo, APPENDED["a literal case"], relock=False)
    report = repo.judge_paths(base, repo.commit("the lock still has the old table"))
    assert report.verdict is Verdict.REJECT
    assert any("lock does not match the head tree" in f.reason for f in report.findings)


NAMED_TABLE = (
    "\n\nROWS = [\n    ([[0, 1]], [[0, 1]]),\n]\n\n\n"
    "@pytest.mark.parametrize(('given', 'expected'), ROWS)\n"
    "def test_rows(given, expected):\n    assert merge_ranges(given) == expected\n"
)
ROWS_GROWN = (
    "    ([[0, 1]], [[0, 1]]),\n]",
    "    ([[0, 1]], [[0, 1]]),\n    ([[4, 5]], [[4, 5]]),\n]",
)


@pytest.mark.parametrize(
    ("elsewhere", "passes"),
    [
        (None, True),
        # The table is also what an assertion accepts: a new row widens it.
        ("\n\ndef test_known(given=[[0, 1]]):\n    assert (given, given) in ROWS\n", False),
        ("\n\nCOPY = list(ROWS)\n", False),
        ("\n\nglobals()['ROWS'].clear()\n", False),
    ],
)
def test_rows_appended_to_a_named_table_pass_only_if_nothing_else_reads_it(
    example_repo: tuple[GitRepo, str], elsewhere: str | None, passes: bool
) -> None:
    repo, _ = example_repo
    repo.append(TEST, NAMED_TABLE + (elsewhere or ""))
    repo.relock(PKG)
    base = repo.commit("a named table, reviewed and locked")
    repo.replace(TEST, *ROWS_GROWN)
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("a row appended"))
    expected = Verdict.PASS if passes else Verdict.REJECT
    assert report.verdict_of(TEST) is expected, [f.reason for f in report.findings]
    assert report.verdict is expected, [f.reason for f in report.findings]


def test_a_named_table_another_test_file_imports_does_not_grow(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    repo.append(TEST, NAMED_TABLE)
    repo.write(
        f"{PKG}/tests/test_known.py",
        "from test_merge import ROWS\n\n\n"
        "def test_known():\n    assert ([[9]], [[9]]) not in ROWS\n",
    )
    repo.relock(PKG)
    base = repo.commit("a named table another test reads")
    repo.replace(TEST, *ROWS_GROWN)
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("a row appended"))
    assert report.verdict_of(TEST) is Verdict.REJECT, [f.reason for f in report.findings]


# ------------------------------- issue 37: fresh names that are not fresh, shared state reached

FRESH_NAMES = read_cases(FIXTURES / "additions" / "fresh_names.py")
SHARED_STATE = read_cases(FIXTURES / "additions" / "shared_state.py")


@pytest.mark.parametrize("case", [c for c in FRESH_NAMES if c.kind == "cheat"], ids=str)
def test_a_new_fixture_under_an_existing_fixtures_name_is_rejected(
    example_repo: tuple[GitRepo, str], case: Case
) -> None:
    repo, base = example_repo
    repo.append(TEST, "\n\n" + case.source)
    report = repo.judge_paths(base, repo.commit(case.name))
    assert report.verdict_of(TEST) is Verdict.REJECT
    assert case.expect in "\n".join(f.reason for f in report.findings)


def test_new_fixtures_with_new_names_pass(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    for case in FRESH_NAMES:
        if case.kind == "honest":
            repo.append(TEST, "\n\n" + case.source)
    report = repo.gate(base, repo.commit("new fixtures, new names"))
    assert report.verdict_of(TEST) is Verdict.PASS, [f.reason for f in report.findings]
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


def test_a_new_conftest_closer_to_the_tests_is_harness(example_repo: tuple[GitRepo, str]) -> None:
    """A conftest below the tests' own overrides their fixtures by name: it is harness."""
    repo, base = example_repo
    conftest = f"{PKG}/tests/conftest.py"
    repo.write(conftest, "import pytest\n\n\n@pytest.fixture\ndef case():\n    return 'x'\n")
    report = repo.judge_paths(base, repo.commit("closer conftest"))
    assert report.verdict_of(conftest) is Verdict.REJECT


def _write_parts(repo: GitRepo, case: Case) -> str:
    """The case's files written into the example; returns the judged test module."""
    for mode, path, text in case.parts():
        if mode == "append":
            repo.append(path, "\n" + text)
        else:
            repo.write(path, text)
    return case.parts()[-1][1]


@pytest.mark.parametrize("case", [c for c in SHARED_STATE if c.kind == "cheat"], ids=str)
def test_a_test_module_reaching_code_that_patches_shared_state_is_rejected(
    example_repo: tuple[GitRepo, str], case: Case
) -> None:
    repo, base = example_repo
    judged = _write_parts(repo, case)
    report = repo.judge_paths(base, repo.commit(case.name))
    assert report.verdict_of(judged) is Verdict.REJECT, [f.reason for f in report.findings]


@pytest.mark.parametrize("case", [c for c in SHARED_STATE if c.kind == "honest"], ids=str)
def test_a_test_module_reaching_only_inert_code_passes(
    example_repo: tuple[GitRepo, str], case: Case
) -> None:
    repo, base = example_repo
    judged = _write_parts(repo, case)
    report = repo.gate(base, repo.commit(case.name))
    assert report.verdict_of(judged) in {Verdict.PASS, Verdict.IGNORED_AS_ORACLE}
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]
