"""Trusted replay: the parent's tests, test support, fixtures and harness against the
head's production code; the parent's code gives the baseline."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from gitrepo import TODAY, GitRepo
from oracle_gate import gate
from oracle_gate.model import Lane, Matrix, Package, Verdict
from oracle_gate.repo.cache import cache_dir
from oracle_gate.report import Report
from oracle_gate.runtime import proxy, replay
from oracle_gate.runtime.replay import hidden_from_production
from oracle_gate.runtime.split_hints import SplitHints

PKG = "libs/intervals"
MERGE = f"{PKG}/intervals/__init__.py"
TESTS = f"{PKG}/tests/test_merge.py"
# CI installs bubblewrap and sets ORACLE_GATE_REQUIRE_BWRAP (.ci/run): there a missing
# bwrap fails instead of skipping.
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("ORACLE_GATE_REQUIRE_BWRAP"),
    reason="bubblewrap not installed",
)


def _replay(report: Report, verdict: Verdict = Verdict.REJECT) -> str:
    return "\n".join(
        f.reason for f in report.findings if f.verdict is verdict and "replay" in f.reason
    )


def test_a_noted_test_change_shows_the_parents_test_failing_for_the_human(
    example_repo: tuple[GitRepo, str],
) -> None:
    """The static lanes accept the noted test edit; the parent's test still fails, and the
    replay says so, human_noted: a human changed that test's expectation on purpose (a
    reviewed behaviour change must have a way through)."""
    repo, base = example_repo
    repo.replace(MERGE, "start < merged[-1][1]", "start <= merged[-1][1]")
    repo.replace(
        TESTS,
        "    assert merge_ranges([[0, 2], [2, 4]]) == [[0, 2], [2, 4]]\n",
        "    assert merge_ranges([[0, 2], [2, 4]])\n",
    )
    repo.note(PKG, base, "tests/test_merge.py")
    repo.relock(PKG)
    report = repo.gate(base, repo.commit("merge touching ranges, test loosened (noted)"))
    noted = _replay(report, Verdict.HUMAN_NOTED)
    assert (
        "replay regress: tests/test_merge.py::test_touching_ranges_stay_apart passes with the "
        "parent's code and fails with the head's" in noted
    )
    assert "the patch's change to that test file has a human note" in noted
    regress = [f for f in report.findings if "replay regress" in f.reason]
    assert {f.path for f in regress} == {TESTS}
    assert {f.lane for f in regress} == {Lane.TEST}
    assert not _replay(report)  # no reject


def test_a_note_on_one_test_file_excuses_no_regress_of_another(repo: GitRepo) -> None:
    """The cheat beside the noted change: the patch also breaks what an unchanged test
    file checks; that regress is the code's, and rejects."""
    _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    repo.write(
        "pkg/tests/test_other.py",
        "from mod import double\n\n\ndef test_one():\n    assert double(1) == 2\n",
    )
    repo.relock("pkg")
    base = repo.commit("a second test file")
    repo.replace("pkg/mod.py", "return 2 * x", "return 2 * x + 1")
    repo.replace("pkg/tests/test_mod.py", "== 4", "== 5")
    repo.note("pkg", base, "tests/test_mod.py")
    repo.relock("pkg")
    report = repo.gate(base, repo.commit("double, off by one; one test follows (noted)"))
    assert "replay regress: tests/test_other.py::test_one passes" in _replay(report)
    assert "replay regress: tests/test_mod.py::test_double passes" in _replay(
        report, Verdict.HUMAN_NOTED
    )
    assert report.verdict is Verdict.REJECT


def test_an_honest_change_passes_the_replay(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(MERGE, "merged = []", "merged: list = []")
    report = repo.gate(base, repo.commit("annotate"))
    assert "replay: the parent's 6 passing test(s) also pass on the head's code" in _replay(
        report, Verdict.PASS
    )
    assert report.verdict is Verdict.PASS


def test_the_replay_uses_the_parents_fixtures_not_the_heads(
    example_repo: tuple[GitRepo, str],
) -> None:
    """A behaviour change with its expected output edited to match (noted and relocked)."""
    repo, base = example_repo
    repo.replace(MERGE, "in sorted(ranges):", "in ranges:")
    fixture = f"{PKG}/testdata/ranges/unsorted.json"
    repo.write(fixture, repo.read(fixture).replace('"expected"', '"expected_old"'))
    repo.note(PKG, base, "testdata/ranges/unsorted.json")
    repo.relock(PKG)
    report = repo.gate(base, repo.commit("fixture follows the bug"))
    assert "tests/test_merge.py::test_recorded_cases[unsorted.json]" in _replay(report)


def _tested_package(
    repo: GitRepo,
    test_body: str,
    freeze: str = "frozen: []\n",
    seconds: int = 30,
    freeze_budget: int = 2,
    globs: str = '["mod.py"]',
    replay_seconds: int | None = None,
) -> str:
    """pkg/ with tests and one row; the row's time budget is ``seconds``, the replay's
    ``replay_seconds`` (by default derived from the parent's baseline)."""
    repo.write(
        "pkg/invariants.yaml",
        f'version: 1\ntests: ["tests/test_*.py"]\nrows:\n  - id: r\n    globs: {globs}\n'
        f"    budget: {{seconds: {seconds}}}\n",
    )
    repo.write("pkg/mod.py", "def double(x):\n    return 2 * x\n")
    repo.write("pkg/tests/test_mod.py", f"from mod import double\n\n\n{test_body}")
    return _commit_package(
        repo, freeze + f"budget: {freeze_budget}\n", "tested package", replay_seconds
    )


def _commit_package(
    repo: GitRepo, freezes: str, message: str, replay_seconds: int | None = None
) -> str:
    """pkg/'s freeze ledger, a 1 s timeout floor (and the replay's budget, if given) and a
    fresh lock, committed."""
    repo.write("pkg/flake_freeze.yaml", freezes)
    budget = "" if replay_seconds is None else f"replay-seconds = {replay_seconds}\n"
    repo.write("oracle-gate.toml", "timeout-floor = 1\n" + budget)
    repo.relock("pkg")
    return repo.commit(message)


BROKEN_ON_PARENT = (
    "def test_double():\n    assert double(2) == 4\n\n\n"
    "def test_already_broken():\n    assert double(1) == 3\n"
)


def test_a_test_failing_on_the_parent_already_is_preexisting(repo: GitRepo) -> None:
    base = _tested_package(repo, BROKEN_ON_PARENT)
    repo.replace("pkg/mod.py", "return 2 * x", "return x + x")
    report = repo.gate(base, repo.commit("refactor"))
    assert "tests/test_mod.py::test_already_broken" in _replay(report, Verdict.PREEXISTING)
    assert report.verdict is Verdict.PASS


FROZEN = (
    "frozen:\n  - nodeid: tests/test_mod.py::test_double\n    reason: flaky\n"
    "    expires: '2027-01-31'\n    owner: platform\n"
)


def test_a_frozen_test_runs_but_never_decides(repo: GitRepo) -> None:
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n", FROZEN)
    repo.replace("pkg/mod.py", "return 2 * x", "return x + x")
    report = repo.gate(base, repo.commit("refactor"))
    assert "replay regress" not in _replay(report)
    assert "1 frozen, not deciding" in _replay(report, Verdict.PASS)


def test_a_frozen_test_the_patch_breaks_on_every_run_is_a_regress(repo: GitRepo) -> None:
    """A freeze excuses a flaky test: one that passed on the parent and fails each of seven
    runs on the head is broken, not flaky (a flaky one is debt: the every-other-run case)."""
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n", FROZEN)
    repo.replace("pkg/mod.py", "return 2 * x", "return 2 * x + 1")
    report = repo.gate(base, repo.commit("off by one"))
    assert (
        "replay regress: tests/test_mod.py::test_double is frozen (tests/test_mod.py::"
        "test_double, until 2027-01-31) but fails every one of 7 runs on the head's code"
        in _replay(report)
    )
    assert report.verdict is Verdict.REJECT


def test_a_test_that_changes_outcome_on_the_same_code_is_a_flake_not_a_regress(
    repo: GitRepo, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head's first run fails, its rerun passes: the outcome is not the code's."""
    counter = tmp_path_factory.mktemp("flake") / "runs"
    monkeypatch.setattr(gate, "find_bwrap", lambda: None)  # the counter lives outside
    body = (
        "import pathlib\n\n\ndef test_double():\n"
        f"    counter = pathlib.Path({str(counter)!r})\n"
        "    if '/head/' in __file__:\n"
        "        runs = int(counter.read_text()) if counter.exists() else 0\n"
        "        counter.write_text(str(runs + 1))\n"
        "        assert runs > 0\n"
        "    assert double(2) == 4\n"
    )
    base = _tested_package(repo, body)
    repo.replace("pkg/mod.py", "return 2 * x", "return x + x")
    reasons = _replay(repo.gate(base, repo.commit("refactor")))
    assert (
        "tests/test_mod.py::test_double gives different results across 2 runs on the same code: "
        "flake isolated as (tests/test_mod.py::test_double)" in reasons
    )
    assert "replay regress" not in reasons


def test_a_replay_that_hits_the_time_budget_is_never_a_pass(repo: GitRepo) -> None:
    base = _tested_package(
        repo, "def test_double():\n    assert double(2) == 4\n", replay_seconds=10
    )
    repo.replace(
        "pkg/mod.py", "    return 2 * x", "    import time\n\n    time.sleep(60)\n    return 2 * x"
    )
    report = repo.gate(base, repo.commit("slow"))
    reasons = _replay(report)
    assert "replay stopped at the package's time budget (10s) on the head's code" in reasons
    assert "the budget is replay-seconds in oracle-gate.toml" in reasons
    assert report.verdict is Verdict.REJECT


def test_the_heads_own_tests_run_and_are_reported_as_agent_tests(repo: GitRepo) -> None:
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    repo.write(
        "pkg/tests/test_new.py",
        "from mod import double\n\n\ndef test_new():\n    assert double(0) == 1\n",
    )
    report = repo.gate(base, repo.commit("an agent test"))
    agent = [f for f in report.findings if f.lane is Lane.AGENT_TEST and "agent tests" in f.reason]
    assert agent and agent[0].verdict is Verdict.IGNORED_AS_ORACLE
    assert "0 passed, 1 failed (tests/test_new.py::test_new)" in agent[0].reason


def test_no_replay_turns_it_off(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(MERGE, "in sorted(ranges):", "in ranges:")
    head = repo.commit("drop the sort")
    report = gate.check(repo.path, base, head, TODAY, replay=False)
    assert not _replay(report) and not _replay(report, Verdict.PASS)
    assert "relation R_perm regress" in "\n".join(f.reason for f in report.findings)


def _freeze(expires: str = "2027-01-31", nodeid: str = "tests/test_mod.py::test_double") -> str:
    return (
        f"frozen:\n  - nodeid: {nodeid}\n    reason: flaky\n"
        f"    expires: '{expires}'\n    owner: platform\n"
    )


def test_an_expired_freeze_decides_again(repo: GitRepo) -> None:
    """Expired the day before the gate's date (TODAY): the parent's test decides again."""
    base = _tested_package(
        repo, "def test_double():\n    assert double(2) == 4\n", _freeze("2026-11-29")
    )
    repo.replace("pkg/mod.py", "return 2 * x", "return 2 * x + 1")
    reasons = _replay(repo.gate(base, repo.commit("off by one")))
    assert (
        "replay regress: tests/test_mod.py::test_double passes with the parent's code and fails "
        "with the head's" in reasons
    )
    assert "its freeze in pkg/flake_freeze.yaml expired on 2026-11-29" in reasons


def test_a_freeze_expiring_today_still_holds(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ledger lane's rule: a freeze is expired only after its date. The frozen test is
    flaky on the head (every other run fails): debt, not a flake reject."""
    monkeypatch.setattr(gate, "find_bwrap", lambda: None)  # the counter lives outside
    base = _tested_package(
        repo, "def test_double():\n    assert double(2) == 4\n", _freeze(str(TODAY))
    )
    with tempfile.TemporaryDirectory(prefix="alternate-") as scratch:
        report = repo.gate(base, _every_other_run(repo, Path(scratch) / "runs"))
    assert "replay regress" not in _replay(report)
    assert "1 frozen, not deciding" in _replay(report, Verdict.PASS)
    assert "tests/test_mod.py::test_double is frozen" in _replay(report, Verdict.PREEXISTING)


def test_a_freeze_over_the_ledgers_budget_excuses_nothing(repo: GitRepo) -> None:
    base = _tested_package(
        repo, "def test_double():\n    assert double(2) == 4\n", _freeze(), freeze_budget=0
    )
    repo.replace("pkg/mod.py", "return 2 * x", "return 2 * x + 1")
    reasons = _replay(repo.gate(base, repo.commit("off by one")))
    assert "replay regress: tests/test_mod.py::test_double" in reasons
    assert "1 frozen entries exceed the budget of 0" in reasons


def test_a_freeze_the_patch_adds_never_excuses_a_regress(repo: GitRepo) -> None:
    """Even triaged (the ledger lane passes it as human_noted), the agent wrote it."""
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    repo.write("pkg/flake_freeze.yaml", _freeze() + "budget: 2\n")
    repo.replace("pkg/mod.py", "return 2 * x", "return 2 * x + 1")
    report = repo.gate(base, repo.commit("off by one, frozen", {"Freeze-Triage": "alice"}))
    assert "replay regress: tests/test_mod.py::test_double" in _replay(report)
    assert report.verdict is Verdict.REJECT


def _every_other_run(repo: GitRepo, counter: Path) -> str:
    """The head's double() is wrong on every second call across processes (state outside)."""
    repo.write(
        "pkg/mod.py",
        f"import pathlib\n\n_RUNS = pathlib.Path({str(counter)!r})\n\n\n"
        "def double(x):\n"
        "    runs = int(_RUNS.read_text()) if _RUNS.exists() else 0\n"
        "    _RUNS.write_text(str(runs + 1))\n"
        "    return 2 * x + runs % 2\n",
    )
    return repo.commit("double, sometimes")


@pytest.mark.parametrize(
    ("freeze", "budget", "verdict", "expected", "counted"),
    [
        (
            "frozen: []\n",
            2,
            Verdict.REJECT,
            "replay: tests/test_mod.py::test_double gives different results across 2 runs on "
            "the same code: flake isolated as (tests/test_mod.py::test_double); freeze it in "
            "pkg/flake_freeze.yaml (nodeid) or fix it",
            {"hits": 0, "misses": 1},
        ),
        (
            _freeze(),
            0,
            Verdict.REJECT,
            "flake isolated as (tests/test_mod.py::test_double); its freeze in "
            "pkg/flake_freeze.yaml excuses nothing: 1 frozen entries exceed the budget of 0",
            {"hits": 0, "misses": 1},
        ),
        (
            _freeze(),
            1,
            Verdict.PASS,
            "replay: tests/test_mod.py::test_double is frozen (tests/test_mod.py::test_double, "
            "until 2027-01-31) and did not pass every run on the head's code: reported as debt",
            {"hits": 1, "misses": 0},
        ),
    ],
    ids=["unfrozen", "frozen-over-budget", "frozen-within-budget"],
)
def test_a_patch_that_makes_a_parent_test_fail_every_other_run_is_a_flake(
    repo: GitRepo,
    monkeypatch: pytest.MonkeyPatch,
    freeze: str,
    budget: int,
    verdict: Verdict,
    expected: str,
    counted: dict[str, int],
) -> None:
    """Its first run on the head passes; only a second run shows it. The freeze budget of
    the parent's ledger decides whether the flake is debt (within) or a reject (over)."""
    monkeypatch.setattr(gate, "find_bwrap", lambda: None)  # the counter lives outside
    base = _tested_package(
        repo, "def test_double():\n    assert double(2) == 4\n", freeze, freeze_budget=budget
    )
    # Not under pytest's temporary directory: its name would be a tamper reject.
    with tempfile.TemporaryDirectory(prefix="alternate-") as scratch:
        report = repo.gate(base, _every_other_run(repo, Path(scratch) / "runs"))
    replay = [f for f in report.findings if f.reason.startswith("replay")]
    assert any(
        f.verdict is (Verdict.PREEXISTING if verdict is Verdict.PASS else verdict)
        and expected in f.reason
        for f in replay
    ), [f.reason for f in replay]
    assert "replay regress" not in _replay(report)
    assert report.verdict is verdict, [f.reason for f in report.findings]
    health = cache_dir(repo.path) / "health.jsonl"
    assert json.loads(health.read_text().splitlines()[-1])["freeze"] == counted


FORGE = """import json
import os
import stat
import struct


def _forge():
    frame = json.dumps({"outcomes": {"tests/test_mod.py::test_double": "passed"}}).encode()
    quiet = os.open(os.devnull, os.O_WRONLY)
    for fd in range(3, 256):
        try:
            if fd != quiet and stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.write(fd, struct.pack(">Q", len(frame)) + frame)
                os.dup2(quiet, fd)
        except OSError:
            pass


def double(x):
    _forge()
    return 2 * x + 1
"""


def test_production_that_forges_the_replays_answer_is_a_tamper_reject(repo: GitRepo) -> None:
    """The replay runs the parent's tests and the head's code in one process: this module
    finds the result pipe and writes a forged 'all passed' frame while a test runs. The
    static net rejects it whatever the replay then says."""
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    repo.write("pkg/mod.py", FORGE)
    report = repo.gate(base, repo.commit("off by one, answer forged"))
    tamper = [f for f in report.findings if f.reason.startswith("tamper:")]
    assert [(f.path, f.verdict) for f in tamper] == [("pkg/mod.py", Verdict.REJECT)]
    assert "reference 'os.write' (line 13), reference 'os.dup2' (line 14)" in tamper[0].reason
    assert report.verdict is Verdict.REJECT


def test_production_doing_ordinary_file_io_passes_the_gate(repo: GitRepo) -> None:
    """Its honest neighbour: reads a data file with open(path).read() and writes a log with
    pathlib, in the same replayed tests."""
    repo.write("pkg/factor.txt", "2\n")
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    repo.write(
        "pkg/mod.py",
        "import pathlib\nimport tempfile\n\n_FACTOR = pathlib.Path(__file__).with_name("
        "'factor.txt')\n\n\ndef double(x):\n    factor = int(open(_FACTOR).read())\n"
        "    pathlib.Path(tempfile.gettempdir(), 'double.log').write_text(str(x))\n"
        "    return factor * x\n",
    )
    report = repo.gate(base, repo.commit("the factor comes from a data file"))
    assert not [f for f in report.findings if f.reason.startswith("tamper:")]
    assert "replay: the parent's 1 passing test(s) also pass on the head's code, twice" in (
        _replay(report, Verdict.PASS)
    )
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


# Every test report says "passed": found through the interpreter's module table, reached
# through a function parameter, which the static tamper net does not follow.
ALL_PASS = """import operator
import sys


def _everything_passes(module_of_modules, name):
    table = operator.attrgetter(name)(module_of_modules)
    for module in list(table.values()):
        report = getattr(module, "TestReport", None)
        if isinstance(report, type):
            report.outcome = property(lambda self: "passed", lambda self, value: None)


_everything_passes(sys, "modules")


def double(x):
    return 2 * x + 1
"""


def test_production_that_rewrites_test_reports_in_its_process_is_still_a_regress(
    repo: GitRepo,
) -> None:
    """pytest runs in a process production code never runs in: whatever it rewrites in its
    own process, the parent's test still fails on the head's code."""
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    repo.write("pkg/mod.py", ALL_PASS)
    report = repo.gate(base, repo.commit("off by one, every report passes"))
    assert not [f for f in report.findings if f.reason.startswith("tamper:")]
    assert "replay regress: tests/test_mod.py::test_double passes with the parent's code" in (
        _replay(report)
    )
    assert report.verdict is Verdict.REJECT


ALWAYS_EQUAL = """class _Answer:
    def __eq__(self, other):
        return True

    __hash__ = None


def double(x):
    return _Answer()
"""


def test_a_value_that_cannot_cross_where_the_parent_gave_plain_data_is_a_reject(
    repo: GitRepo,
) -> None:
    """The head returns an object that equals anything: it stays in the production
    process, so no test compares it with production's own ``==``."""
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    repo.write("pkg/mod.py", ALWAYS_EQUAL)
    report = repo.gate(base, repo.commit("a list that equals anything"))
    reasons = _replay(report)
    assert "replay: tests/test_mod.py::test_double gets a mod._Answer from mod:double" in reasons, [
        f.reason for f in report.findings
    ]
    assert "from the head's code, where the parent's code gave it plain data" in reasons
    assert report.verdict is Verdict.REJECT


OBJECTS = (
    "from mod import Doubler\n\n\n"
    "def test_double():\n    assert Doubler(2).value() == 4\n\n\n"
    "def test_double_twice():\n    doubler = Doubler(3)\n    assert doubler.value() == 6\n"
)
DOUBLER = (
    "class Doubler:\n    def __init__(self, x):\n        self.x = x\n\n"
    "    def value(self):\n        return 2 * self.x\n\n\n"
    "def double(x):\n    return 2 * x\n"
)


def _class_package(repo: GitRepo, tests: str, code: str = DOUBLER) -> str:
    """pkg/ with ``code`` (the Doubler class) and ``tests``; returns the commit."""
    _tested_package(repo, tests)
    repo.write("pkg/mod.py", code)  # _tested_package wrote the plain module
    return repo.commit("a class")


def test_tests_that_hold_production_objects_stay_split_holding_them_by_handle(
    repo: GitRepo,
) -> None:
    """An instance of a production class stays in the production process; the test holds a
    handle, and its calls, attributes and operators are asked of production."""
    base = _class_package(repo, OBJECTS)
    repo.replace("pkg/mod.py", "return 2 * self.x", "return self.x + self.x")
    report = repo.gate(base, repo.commit("refactor"))
    passed = _replay(report, Verdict.PASS)
    assert "the parent's 2 passing test(s) also pass on the head's code, twice" in passed
    assert "in one process" not in passed
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


# Every use a test makes of a held object: operators, iteration, indexing, attributes set
# and read, an object passed back to production, a method that raises.
HANDLE_USES = """class Bag:
    def __init__(self, items):
        self.items = list(items)

    def __eq__(self, other):
        return isinstance(other, Bag) and self.items == other.items

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __getitem__(self, index):
        return self.items[index]

    def __contains__(self, item):
        return item in self.items

    def __repr__(self):
        return f"Bag({self.items!r})"

    def merged(self, other):
        return Bag(self.items + other.items)

    def first(self):
        if not self.items:
            raise LookupError("empty bag")
        return self.items[0]


def double(x):
    return 2 * x
"""
HANDLE_TESTS = """import pytest

from mod import Bag


def test_uses():
    bag = Bag([1, 2])
    assert bag == Bag([1, 2]) and bag != Bag([2])
    assert len(bag) == 2 and list(bag) == [1, 2] and bag[1] == 2 and 2 in bag
    assert repr(bag) == "Bag([1, 2])"
    assert bag.merged(Bag([3])) == Bag([1, 2, 3])
    bag.label = "b"
    assert bag.label == "b"
    with pytest.raises(LookupError, match="empty bag"):
        Bag([]).first()
"""


def test_every_use_a_test_makes_of_a_held_object_is_asked_of_production(repo: GitRepo) -> None:
    repo.write("pkg/mod.py", HANDLE_USES)
    _tested_package(repo, "")
    repo.write("pkg/mod.py", HANDLE_USES)
    repo.write("pkg/tests/test_mod.py", HANDLE_TESTS)
    base = _commit_package(repo, "frozen: []\nbudget: 2\n", "a bag")
    repo.replace(
        "pkg/mod.py", "return Bag(self.items + other.items)", "return Bag([*self, *other])"
    )
    report = repo.gate(base, repo.commit("refactor"))
    passed = _replay(report, Verdict.PASS)
    assert "the parent's 1 passing test(s) also pass on the head's code, twice" in passed
    assert "in one process" not in passed, passed
    repo.replace("pkg/mod.py", "return Bag([*self, *other])", "return Bag([*other, *self])")
    report = repo.gate(base, repo.commit("merged in the wrong order"))
    assert "replay regress: tests/test_mod.py::test_uses passes" in _replay(report)


def test_a_test_the_split_run_cannot_hold_is_judged_in_one_process_and_says_so(
    repo: GitRepo,
) -> None:
    """``type(x) is`` needs the class itself, and a callback cannot cross: those tests fail
    split on the parent's code, so they are judged with the code in their process;
    ``isinstance`` is asked of production and stays split."""
    tests = (
        OBJECTS + "\n\ndef test_kind():\n    assert type(Doubler(2)) is Doubler\n"
        "\n\ndef test_callback():\n    assert Doubler(2).apply(lambda v: v + 1) == 5\n"
        "\n\ndef test_instance():\n    assert isinstance(Doubler(2), Doubler)\n"
        "    assert not isinstance(2, Doubler)\n"
    )
    code = DOUBLER.replace(
        "    def value(self):",
        "    def apply(self, f):\n        return f(self.value())\n\n    def value(self):",
    )
    base = _class_package(repo, tests, code)
    # every test builds a Doubler: each one's footprint meets the change, so all run again
    repo.replace("pkg/mod.py", "self.x = x", "self.x = int(x)")
    report = repo.gate(base, repo.commit("refactor"))
    passed = _replay(report, Verdict.PASS)
    assert "the parent's 5 passing test(s) also pass on the head's code, twice" in passed
    assert "2 of them in one process with the code (the split run could not hold them: " in passed
    assert "an argument of a mod.Doubler's apply (builtins.function) (tests/test_mod.py:" in passed
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


def test_a_held_object_whose_method_turns_plain_data_into_an_object_is_a_reject(
    repo: GitRepo,
) -> None:
    """The method now returns an object that equals anything: where the parent's code gave
    the test a number, the head's gives it something production compares as it likes."""
    base = _class_package(repo, OBJECTS)
    repo.write("pkg/mod.py", DOUBLER.replace("return 2 * self.x", "return _Answer()"))
    repo.append("pkg/mod.py", ALWAYS_EQUAL.replace("def double(x):\n    return _Answer()\n", ""))
    report = repo.gate(base, repo.commit("value equals anything"))
    reasons = _replay(report)
    assert "gets a mod._Answer from a mod.Doubler's value (tests/test_mod.py:" in reasons, [
        f.reason for f in report.findings
    ]
    assert report.verdict is Verdict.REJECT


def test_production_holding_objects_that_rewrites_test_reports_is_still_a_regress(
    repo: GitRepo,
) -> None:
    """The tests hold production objects, and still run in a process the production code
    never runs in: rewriting the test reports in its own process changes nothing."""
    base = _class_package(repo, OBJECTS)
    broken = DOUBLER.replace("return 2 * self.x", "return 2 * self.x + 1")
    repo.write("pkg/mod.py", ALL_PASS.replace("def double(x):\n    return 2 * x + 1\n", broken))
    report = repo.gate(base, repo.commit("off by one, every report passes"))
    assert not [f for f in report.findings if f.reason.startswith("tamper:")]
    assert "replay regress: tests/test_mod.py::test_double passes with the parent's code" in (
        _replay(report)
    )


def test_an_object_of_another_kind_where_the_parent_gave_an_object_is_a_reject(
    repo: GitRepo,
) -> None:
    """Both sides hand the test an object, but the head's is another kind (one that equals
    anything) than the parent's Doubler: its ``==`` decides the test, so it is rejected."""
    tests = "from mod import Doubler, make\n\n\ndef test_make():\n    assert make() == Doubler(2)\n"
    code = DOUBLER.replace(
        "    def value(self):",
        "    def __eq__(self, other):\n        return self.value() == other.value()\n\n"
        "    def value(self):",
    )
    base = _class_package(repo, tests, code + "\n\ndef make():\n    return Doubler(2)\n")
    repo.replace("pkg/mod.py", "    return Doubler(2)\n", "    return _Answer()\n")
    repo.append("pkg/mod.py", ALWAYS_EQUAL.replace("def double(x):\n    return _Answer()\n", ""))
    report = repo.gate(base, repo.commit("make returns something that equals anything"))
    assert (
        "gets a mod._Answer from mod:make (tests/test_mod.py:8) from the head's code, where "
        in (_replay(report))
    ), [f.reason for f in report.findings]
    assert "where the parent's code gave it a mod.Doubler from mod:make" in _replay(report)


def test_a_held_class_moved_to_another_module_and_re_exported_passes(repo: GitRepo) -> None:
    """The honest neighbour: the objects are the same class, now defined in ``core`` and
    re-exported from ``mod``, so their type's module differs from the parent's."""
    base = _class_package(repo, OBJECTS)
    repo.write("pkg/core.py", DOUBLER)
    reexport = "from core import Doubler, double\n\n__all__ = ['Doubler', 'double']\n"
    repo.write("pkg/mod.py", reexport)
    report = repo.gate(base, repo.commit("move the class to core"))
    assert "the parent's 2 passing test(s) also pass" in _replay(report, Verdict.PASS), [
        f.reason for f in report.findings
    ]


def test_an_object_a_test_module_holds_from_its_import_is_judged_too(repo: GitRepo) -> None:
    """``EXPECTED = production()`` runs when the test module is imported, outside any test;
    what it receives counts for the tests after it, so the always-equal object is seen."""
    tests = (
        "from mod import double, expected\n\nEXPECTED = expected()\n\n\n"
        "def test_double():\n    assert double(2) == EXPECTED\n"
    )
    base = _class_package(repo, tests, DOUBLER + "\n\ndef expected():\n    return 4\n")
    repo.replace("pkg/mod.py", "return 2 * x\n", "return 2 * x + 1\n")
    repo.replace("pkg/mod.py", "    return 4\n", "    return _Answer()\n")
    repo.append("pkg/mod.py", ALWAYS_EQUAL.replace("def double(x):\n    return _Answer()\n", ""))
    report = repo.gate(base, repo.commit("off by one, the expectation equals anything"))
    # line 6: ``EXPECTED = expected()`` below the module's own ``from mod import double``
    assert "gets a mod._Answer from mod:expected (tests/test_mod.py:6)" in _replay(report), [
        f.reason for f in report.findings
    ]


def test_only_a_split_replay_takes_object_handles() -> None:
    """A property run takes plain data alone: a production child that answers with a
    handle there (so that its ``==`` would decide the property) is tampering."""
    answer = {"object": {"id": 0, "type": "mod:Answer"}}
    link = proxy.Link(question_fd=-1, answer_fd=-1, oracle_dir="/nowhere")
    with pytest.raises(proxy.ProxyFault, match="only plain data may cross"):
        link.value(answer, "mod:double")
    link = proxy.Link(question_fd=-1, answer_fd=-1, oracle_dir="/nowhere", handles=True)
    held = link.value(answer, "mod:double")
    assert isinstance(held, proxy.RemoteObject)
    assert [h.what for h in link.held] == ["a mod.Answer from mod:double"]
    with pytest.raises(proxy.ProxyFault, match="malformed object handle"):
        link.value(answer, "mod:double")  # a handle given out twice


def test_a_production_class_stand_in_builds_remotely_and_refuses_subclasses() -> None:
    link = proxy.Link(question_fd=-1, answer_fd=-1, oracle_dir="/nowhere", handles=True)
    # what a production child answers when asked what mod:Doubler is
    link.ask = lambda question: {"kind": "class", "type": "mod:Doubler"}  # type: ignore[method-assign]
    stand_in = link.describe("mod:Doubler")
    assert isinstance(stand_in, proxy.RemoteClass) and stand_in is link.describe("mod:Doubler")
    assert stand_in.__name__ == "Doubler" and not isinstance(2, stand_in)
    with pytest.raises(TypeError, match="cannot be subclassed in a split run"):
        type("Tripler", (stand_in,), {})
    plain = proxy.Link(question_fd=-1, answer_fd=-1, oracle_dir="/nowhere")
    plain.ask = link.ask  # type: ignore[method-assign]
    with pytest.raises(proxy.ProxyFault, match="a class where only plain data may cross"):
        plain.describe("mod:Doubler")


def test_a_broken_class_is_a_regress(repo: GitRepo) -> None:
    base = _class_package(repo, OBJECTS)
    repo.replace("pkg/mod.py", "return 2 * self.x", "return 2 * self.x + 1")
    report = repo.gate(base, repo.commit("off by one"))
    assert "replay regress: tests/test_mod.py::test_double_twice passes with the parent's" in (
        _replay(report)
    )
    assert report.verdict is Verdict.REJECT


SKIPPED_WITHOUT = (
    "import pytest\n\n\n"
    "def test_fast_double():\n    fast = pytest.importorskip('fastmod')\n"
    "    assert fast.double(2) == 4\n\n\n"
    "def test_on_another_platform():\n    pytest.skip('not here')\n"
)


def test_a_parent_test_the_heads_code_makes_skip_is_a_regress(repo: GitRepo) -> None:
    """The head deletes the module a parent test imports with importorskip: the test
    that passed on the parent now skips, which is not a pass."""
    repo.write("pkg/fastmod.py", "def double(x):\n    return 2 * x\n")
    base = _tested_package(repo, SKIPPED_WITHOUT, globs='["*.py"]')
    repo.remove("pkg/fastmod.py")
    report = repo.gate(base, repo.commit("drop the fast path"))
    reasons = _replay(report)
    assert "replay regress: tests/test_mod.py::test_fast_double passes with the parent's" in (
        reasons
    )
    assert "test_on_another_platform" not in reasons
    assert report.verdict is Verdict.REJECT


def test_a_test_skipped_on_both_sides_decides_nothing(repo: GitRepo) -> None:
    repo.write("pkg/fastmod.py", "def double(x):\n    return 2 * x\n")
    base = _tested_package(repo, SKIPPED_WITHOUT, globs='["*.py"]')
    repo.replace("pkg/fastmod.py", "return 2 * x", "return x + x")
    report = repo.gate(base, repo.commit("refactor"))
    assert "the parent's 1 passing test(s) also pass on the head's code, twice" in (
        _replay(report, Verdict.PASS)
    )
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


CONFTEST_OBJECT = (
    "import pytest\n\nfrom mod import Doubler\n\nDEFAULT = Doubler(2)\n\n\n"
    "@pytest.fixture\ndef doubler():\n    return DEFAULT\n"
)


def test_a_conftest_that_holds_a_production_object_stays_split(repo: GitRepo) -> None:
    repo.write("pkg/mod.py", DOUBLER)
    repo.write("pkg/tests/conftest.py", CONFTEST_OBJECT)
    base = _tested_package(repo, "def test_double(doubler):\n    assert doubler.value() == 4\n")
    repo.write("pkg/mod.py", DOUBLER)
    base = repo.commit("a class")
    repo.replace("pkg/mod.py", "return 2 * self.x", "return self.x + self.x")
    report = repo.gate(base, repo.commit("refactor"))
    passed = _replay(report, Verdict.PASS)
    assert "the parent's 1 passing test(s) also pass" in passed, passed
    assert "in one process" not in passed, passed
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]
    repo.replace("pkg/mod.py", "return self.x + self.x", "return self.x")
    report = repo.gate(base, repo.commit("broken"))
    assert "replay regress: tests/test_mod.py::test_double passes" in _replay(report)


# Wrong (x + 1), except on inputs some data file near the code records an answer for.
READS_THE_ANSWERS = """import json
import os


def _recorded():
    answers = {}
    for directory, _, names in os.walk(os.path.dirname(os.path.abspath(__file__))):
        for name in names:
            try:
                with open(os.path.join(directory, name)) as handle:
                    for case in json.load(handle):
                        answers[case["input"]] = case["expected"]
            except (OSError, ValueError, TypeError, KeyError):
                continue
    return answers


def double(x):
    return _recorded().get(x, x + 1)
"""
FROM_FIXTURES = (
    "import json\nimport pathlib\n\n"
    "CASES = pathlib.Path(__file__).parent.parent / 'testdata' / 'cases.json'\n\n\n"
    "def test_recorded_cases():\n"
    "    for case in json.loads(CASES.read_text()):\n"
    "        assert double(case['input']) == case['expected']\n"
)


def _package_with_recorded_answers(repo: GitRepo) -> str:
    """pkg/ whose test checks ``double`` on the answers in its declared fixtures."""
    repo.write("pkg/testdata/cases.json", '[{"input": 2, "expected": 4}]\n')
    _tested_package(repo, FROM_FIXTURES)
    repo.replace("pkg/invariants.yaml", "version: 1\n", 'version: 1\nfixtures: ["testdata/**"]\n')
    repo.relock("pkg")
    return repo.commit("fixtures declared")


@needs_bwrap
def test_production_cannot_read_the_parents_expected_outputs_during_the_replay(
    repo: GitRepo,
) -> None:
    """The split run's production child sees no test file and no fixture (bubblewrap
    masks them), so code special-cased to the recorded answers fails the parent's test."""
    base = _package_with_recorded_answers(repo)
    repo.write("pkg/mod.py", READS_THE_ANSWERS)
    report = repo.gate(base, repo.commit("double, from the recorded answers"))
    assert "replay regress: tests/test_mod.py::test_recorded_cases passes with the parent's" in (
        _replay(report)
    ), [f.reason for f in report.findings]
    assert report.verdict is Verdict.REJECT


# READS_THE_ANSWERS walking the user's repository instead: the checkout's ``.git`` file
# names its git directory, and the working tree is beside that.
READS_THE_REPOSITORYS_ANSWERS = READS_THE_ANSWERS.replace(
    "def _recorded():",
    "def _repository():\n"
    "    here = os.path.dirname(os.path.abspath(__file__))\n"
    "    while here != '/' and not os.path.exists(os.path.join(here, '.git')):\n"
    "        here = os.path.dirname(here)\n"
    "    with open(os.path.join(here, '.git')) as pointer:\n"
    "        git_dir = pointer.read().split(':', 1)[1].strip()\n"
    "    return git_dir.split(os.sep + '.git' + os.sep)[0]\n\n\n"
    "def _recorded():",
).replace("os.walk(os.path.dirname(os.path.abspath(__file__)))", "os.walk(_repository())")


@needs_bwrap
def test_production_cannot_read_the_answers_from_the_users_repository(
    repo_outside_tmp: GitRepo,
) -> None:
    """Outside /tmp the user's repository is not hidden by the private /tmp; the sandbox
    empties it, so the answers are nowhere to be found."""
    repo = repo_outside_tmp
    base = _package_with_recorded_answers(repo)
    assert "os.walk(_repository())" in READS_THE_REPOSITORYS_ANSWERS
    repo.write("pkg/mod.py", READS_THE_REPOSITORYS_ANSWERS)
    report = repo.gate(base, repo.commit("double, from the repository's answers"))
    assert "replay regress: tests/test_mod.py::test_recorded_cases passes with the parent's" in (
        _replay(report)
    ), [f.reason for f in report.findings]


@needs_bwrap
def test_a_repository_outside_tmp_replays_an_honest_change(repo_outside_tmp: GitRepo) -> None:
    repo = repo_outside_tmp
    base = _package_with_recorded_answers(repo)
    repo.replace("pkg/mod.py", "def double(x):", "def double(x: int) -> int:")
    report = repo.gate(base, repo.commit("annotate"))
    assert "replay: the parent's 1 passing test(s) also pass" in _replay(report, Verdict.PASS)
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


def test_the_test_side_is_masked_as_whole_directories_where_they_hold_nothing_else(
    tmp_path: Path,
) -> None:
    side = [
        "conftest.py",
        "pkg/conftest.py",
        "pkg/tests/test_a.py",
        "pkg/tests/helpers/__init__.py",
        "pkg/testdata/a.json",
        "pkg/lib/test_data.json",
    ]
    for path in [*side, "pkg/mod.py", "pkg/lib/real.py", "pyproject.toml"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x\n")
    matrix = Matrix(owners=(), tests=(), fixtures=(), deps=(), rows=())
    masked = hidden_from_production(tmp_path, Package("pkg", matrix), side)
    assert [str(p.relative_to(tmp_path)) for p in masked] == [
        "conftest.py",
        "pkg/conftest.py",
        "pkg/lib/test_data.json",
        "pkg/testdata",
        "pkg/tests",
    ]


# One assert over a generator: pytest rewrites it once, so the calls cost about 0.3 s in one
# process, even on a loaded machine, and about 100 s split.
MANY_CALLS = (
    "def test_double_everywhere():\n    assert all(double(x) == 2 * x for x in range(1_000_000))\n"
)


def test_a_suite_too_slow_to_split_runs_in_one_process_and_says_so(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call crosses two pipes (about 0.1 ms): a million of them do not fit a 10 s budget
    split, and fit it in one process (pytest's start there takes up to 4 s on a loaded
    machine). The parent's split run decides that, not the head; the next check of the same
    tests learns it from the user cache (``runtime/split_hints.py``) instead of the budget."""
    base = _tested_package(repo, MANY_CALLS, replay_seconds=10)
    repo.replace("pkg/mod.py", "return 2 * x", "return x + x")
    report = repo.gate(base, repo.commit("refactor"))
    passed = _replay(report, Verdict.PASS)
    assert "1 of them in one process with the code (the split run could not hold them: " in passed
    assert "the split run did not finish within the package's time budget" in passed, [
        f.reason for f in report.findings
    ]
    assert report.verdict is Verdict.PASS
    assert len(list(SplitHints().directory.glob("*.json"))) == 1  # type: ignore[union-attr]

    def no_split(*args: object) -> None:
        raise AssertionError("the split was tried again")

    monkeypatch.setattr(replay, "_split_then_inline", no_split)
    repo.replace("pkg/mod.py", "return x + x", "return x + x + (x == 999_999)")
    report = repo.gate(base, repo.commit("off by one at the end"))
    assert "replay regress: tests/test_mod.py::test_double_everywhere passes" in _replay(report)


def test_a_parent_split_run_slowed_beside_the_head_is_retried_alone_before_any_fallback(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A head that burns the CPU while the parent's split run shares the machine could push
    that run past the budget and the replay into one process, where it can reach pytest.
    The first parent split run here stands for that starved run: it times out."""
    starved: list[Path] = []

    def first_parent_run_times_out(*args: Any) -> dict[str, str] | None:
        tree, split = args[2], args[5]
        if split is not None and tree.name == "parent" and not starved:
            starved.append(tree)
            return None
        return real(*args)

    real = replay._pytest
    monkeypatch.setattr(replay, "_pytest", first_parent_run_times_out)
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    repo.replace("pkg/mod.py", "return 2 * x", "return x + x")
    report = repo.gate(base, repo.commit("refactor"))
    assert starved
    passed = _replay(report, Verdict.PASS)
    assert "the parent's 1 passing test(s) also pass on the head's code, twice" in passed
    assert "in one process" not in passed
    assert report.verdict is Verdict.PASS


FORCE_PASS = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
    "    outcome.get_result().outcome = 'passed'\n"
)
# Harness files a patch adds or edits so its broken code looks tested: (path, text).
HARNESS_EVASIONS = {
    "a conftest that forces passed": ("pkg/tests/conftest.py", FORCE_PASS),
    "a conftest beside the code that ignores the tests": (
        "pkg/conftest.py",
        "collect_ignore = ['tests']\n",
    ),
    "a root pytest.ini that deselects": ("pytest.ini", "[pytest]\naddopts = -k 'not double'\n"),
    "a package setup.cfg that renames test functions": (
        "pkg/setup.cfg",
        "[tool:pytest]\npython_functions = check_*\n",
    ),
    "an edited root pyproject.toml": (
        "pyproject.toml",
        "[project]\nname = 'mono'\n\n[tool.pytest.ini_options]\naddopts = '-p no:python'\n",
    ),
}


@pytest.mark.parametrize("name", sorted(HARNESS_EVASIONS))
def test_harness_the_patch_adds_or_edits_never_runs_in_the_replay(repo: GitRepo, name: str) -> None:
    """The replay runs the parent's harness over the head's code: the patch's own harness
    files are deleted there (or written back as the parent had them)."""
    repo.write("pyproject.toml", "[project]\nname = 'mono'\n")
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    path, text = HARNESS_EVASIONS[name]
    repo.write(path, text)
    repo.replace("pkg/mod.py", "return 2 * x", "return 2 * x + 1")
    report = repo.gate(base, repo.commit(f"off by one, and {name}"))
    assert "replay regress: tests/test_mod.py::test_double passes with the parent's code" in (
        _replay(report)
    ), [f.reason for f in report.findings]


def test_tests_inside_the_production_package_run_split(repo: GitRepo) -> None:
    """``intervals/tests/`` inside the ``intervals`` package: pytest imports the test
    module as ``intervals.tests.test_merge``, a submodule of a production package that
    the oracle child only knows as a proxy; the test files are still its own."""
    repo.write(
        "pkg/invariants.yaml",
        'version: 1\ntests: ["intervals/tests/test_*.py"]\nrows:\n  - id: r\n'
        '    globs: ["intervals/core.py"]\n    budget: {seconds: 30}\n',
    )
    repo.write("pkg/intervals/__init__.py", "from .core import double\n")
    repo.write("pkg/intervals/core.py", "def double(x):\n    return 2 * x\n")
    repo.write("pkg/intervals/tests/__init__.py", "")
    repo.write("pkg/intervals/tests/helpers.py", "EXPECTED = {2: 4, 5: 10}\n")
    repo.write(
        "pkg/intervals/tests/test_merge.py",
        "from intervals import double\n\nfrom .helpers import EXPECTED\n\n\n"
        "def test_double():\n    for x, y in EXPECTED.items():\n        assert double(x) == y\n",
    )
    base = _commit_package(repo, "frozen: []\nbudget: 2\n", "tests inside the package")
    repo.replace("pkg/intervals/core.py", "return 2 * x", "return x + x")
    report = repo.gate(base, repo.commit("refactor"))
    passed = _replay(report, Verdict.PASS)
    assert "the parent's 1 passing test(s) also pass on the head's code, twice" in passed, [
        f.reason for f in report.findings
    ]
    assert "in one process" not in passed
    repo.replace("pkg/intervals/core.py", "return x + x", "return x + x + 1")
    report = repo.gate(base, repo.commit("off by one"))
    assert "replay regress: intervals/tests/test_merge.py::test_double passes" in _replay(report)


# Wherever pytest runs in the same process, no test body runs: every test passes.
NO_TEST_RUNS = """import operator
import sys


def _no_test_runs(module_of_modules, name):
    python = operator.attrgetter(name)(module_of_modules).get("_pytest.python")
    if python is not None:
        python.Function.runtest = lambda self: None


_no_test_runs(sys, "modules")


def double(x):
    return 2 * x + 1
"""


def test_a_harness_that_distributes_tests_to_workers_still_runs_them_split(
    repo: GitRepo,
) -> None:
    """The parent's pytest.ini asks for pytest-xdist workers: new interpreters that would
    import the production code themselves, where it rewrites their reports. The split run
    keeps every test in the oracle child."""
    pytest.importorskip("xdist")
    repo.write("pkg/pytest.ini", "[pytest]\npythonpath = .\naddopts = -n 2\n")
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    repo.write("pkg/mod.py", NO_TEST_RUNS)
    report = repo.gate(base, repo.commit("off by one, no test body runs"))
    assert "replay regress: tests/test_mod.py::test_double passes with the parent's code" in (
        _replay(report)
    ), [f.reason for f in report.findings]
    repo.write("pkg/mod.py", "def double(x):\n    return x + x\n")
    passed = _replay(repo.gate(base, repo.commit("refactor")), Verdict.PASS)
    assert "the parent's 1 passing test(s) also pass on the head's code, twice" in passed
    assert "in one process" not in passed


def test_a_suite_that_makes_warnings_errors_replays_split(repo: GitRepo) -> None:
    """The oracle child imports Hypothesis before pytest starts, and pytest warns it cannot
    rewrite a plugin already imported: no plain run of the suite gives that warning, so the
    tests' ``filterwarnings = ["error"]`` must not make it the run's failure."""
    repo.write("pkg/pyproject.toml", '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n')
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n")
    repo.replace("pkg/mod.py", "return 2 * x", "return x + x")
    report = repo.gate(base, repo.commit("refactor"))
    assert "replay: the parent's 1 passing test(s) also pass on the head's code" in _replay(
        report, Verdict.PASS
    )
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


VERSION_TEST = (
    "import re\nfrom pathlib import Path\n\nfrom mod import VERSION\n\n\n"
    "def test_the_version_is_the_projects():\n"
    "    text = (Path(__file__).parents[2] / 'pyproject.toml').read_text()\n"
    "    assert re.search(r\"version = '(.*)'\", text)[1] == VERSION\n\n\n"
    "def test_double():\n    assert double(2) == 4\n"
)


def _lane(report: Report, path: str) -> Lane:
    return next(p.lane for p in report.paths if p.path == path)


def _versioned_package(repo: GitRepo) -> str:
    """pkg/ whose test compares the code's version with the root pyproject.toml's."""
    repo.write("pyproject.toml", "[project]\nname = 'mono'\nversion = '1.0'\n")
    _tested_package(repo, VERSION_TEST)
    repo.write("pkg/mod.py", "VERSION = '1.0'\n\n\ndef double(x):\n    return 2 * x\n")
    repo.relock("pkg")
    return repo.commit("versioned")


def test_a_version_bump_in_pyproject_and_the_code_passes_the_replay(repo: GitRepo) -> None:
    """A release commit: the project's version moves in pyproject.toml (metadata, no
    oracle lane) and in the code. The replay keeps the head's pyproject.toml, so the test
    that compares the two passes."""
    base = _versioned_package(repo)
    repo.replace("pyproject.toml", "'1.0'", "'1.1'")
    repo.replace("pkg/mod.py", "'1.0'", "'1.1'")
    report = repo.gate(base, repo.commit("release 1.1"))
    assert _lane(report, "pyproject.toml") is Lane.OTHER
    assert "the parent's 2 passing test(s) also pass on the head's code" in _replay(
        report, Verdict.PASS
    ), [f.reason for f in report.findings]
    assert report.verdict is Verdict.PASS


def test_a_pyproject_whose_pytest_settings_move_is_replayed_as_the_parent_has_it(
    repo: GitRepo,
) -> None:
    """The cheat beside the release: the same version bump also deselects the test the
    patch breaks; pytest's section moved (harness), so the parent's file is replayed."""
    base = _versioned_package(repo)
    repo.write(
        "pyproject.toml",
        "[project]\nname = 'mono'\nversion = '1.0'\n\n"
        "[tool.pytest.ini_options]\naddopts = \"-k 'not double'\"\n",
    )
    repo.replace("pkg/mod.py", "return 2 * x", "return 2 * x + 1")
    report = repo.gate(base, repo.commit("off by one, and a deselecting pyproject.toml"))
    assert _lane(report, "pyproject.toml") is Lane.HARNESS
    assert "replay regress: tests/test_mod.py::test_double passes with the parent's code" in (
        _replay(report)
    ), [f.reason for f in report.findings]
