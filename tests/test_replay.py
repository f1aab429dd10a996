"""Trusted replay: the parent's tests, test support, fixtures and harness against the
head's production code; the parent's code gives the baseline."""

from __future__ import annotations

import pytest

from gitrepo import TODAY, GitRepo
from oracle_gate import gate
from oracle_gate.model import Lane, Verdict
from oracle_gate.report import Report

PKG = "libs/intervals"
MERGE = f"{PKG}/intervals/__init__.py"
TESTS = f"{PKG}/tests/test_merge.py"


def _replay(report: Report, verdict: Verdict = Verdict.REJECT) -> str:
    return "\n".join(
        f.reason for f in report.findings if f.verdict is verdict and "replay" in f.reason
    )


def test_a_noted_weakened_test_is_still_caught_by_the_parents_test(
    example_repo: tuple[GitRepo, str],
) -> None:
    """The static lanes accept the noted test edit; the parent's test still fails."""
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
    assert (
        "replay regress: tests/test_merge.py::test_touching_ranges_stay_apart passes with the "
        "parent's code and fails with the head's" in _replay(report)
    )
    regress = [f for f in report.findings if "replay regress" in f.reason]
    assert {f.path for f in regress} == {TESTS}
    assert {f.lane for f in regress} == {Lane.TEST}


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
    repo: GitRepo, test_body: str, freeze: str = "frozen: []\n", seconds: int = 30
) -> str:
    """pkg/ with tests and one row; the package's time budget is ``seconds``."""
    repo.write(
        "pkg/invariants.yaml",
        'version: 1\ntests: ["tests/test_*.py"]\nrows:\n  - id: r\n    globs: ["mod.py"]\n'
        f"    budget: {{seconds: {seconds}}}\n",
    )
    repo.write("pkg/mod.py", "def double(x):\n    return 2 * x\n")
    repo.write("pkg/tests/test_mod.py", f"from mod import double\n\n\n{test_body}")
    repo.write("pkg/flake_freeze.yaml", freeze + "budget: 2\n")
    repo.write("oracle-gate.toml", "timeout-floor = 1\n")
    repo.relock("pkg")
    return repo.commit("tested package")


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


def test_a_frozen_test_runs_but_never_decides(repo: GitRepo) -> None:
    freeze = (
        "frozen:\n  - nodeid: tests/test_mod.py::test_double\n    reason: flaky\n"
        "    expires: '2027-01-31'\n    owner: platform\n"
    )
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n", freeze)
    repo.replace("pkg/mod.py", "return 2 * x", "return 2 * x + 1")
    report = repo.gate(base, repo.commit("off by one"))
    assert "replay regress" not in _replay(report)
    assert "1 frozen, not deciding" in _replay(report, Verdict.PASS)


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
    assert "tests/test_mod.py::test_double gives different outcomes on the same code: flake" in (
        reasons
    )
    assert "replay regress" not in reasons


def test_a_replay_that_hits_the_time_budget_is_never_a_pass(repo: GitRepo) -> None:
    base = _tested_package(repo, "def test_double():\n    assert double(2) == 4\n", seconds=10)
    repo.replace(
        "pkg/mod.py", "    return 2 * x", "    import time\n\n    time.sleep(60)\n    return 2 * x"
    )
    report = repo.gate(base, repo.commit("slow"))
    assert "replay stopped at the package's time budget (10s) on the head's code" in _replay(report)
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
