"""A rename is judged at both ends: the old path's lane sees a deletion, the new one an addition."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict
from reports import lane_and_verdict

PKG = "libs/intervals"


@pytest.mark.parametrize(
    ("old", "new", "lane"),
    [
        ("tests/test_merge.py", "tests/test_merge.md", Lane.TEST),
        ("seeds.jsonl", "seeds.md", Lane.LEDGER),
        ("flake_freeze.yaml", "docs/flake_freeze.yaml", Lane.LEDGER),
        ("invariants.yaml", "invariants.md", Lane.MATRIX),
        ("testdata/ranges/unsorted.json", "docs/unsorted.json", Lane.FIXTURE),
        ("props.py", "docs/props.md", Lane.PROPERTY),
        ("oracle_gate.lock", "docs/lock.json", Lane.LOCK),
    ],
)
def test_oracle_file_renamed_out_of_its_lane_is_a_removal(
    example_repo: tuple[GitRepo, str], old: str, new: str, lane: Lane
) -> None:
    repo, base = example_repo
    repo.write(f"{PKG}/{new}", "")
    repo.remove(f"{PKG}/{new}")
    repo.git("mv", f"{PKG}/{old}", f"{PKG}/{new}")
    report = repo.judge_paths(base, repo.commit("rename"))
    assert lane_and_verdict(report, f"{PKG}/{old}") == (lane, Verdict.REJECT)
    assert report.exit_code == 1


def test_test_support_renamed_to_docs_is_a_removal(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    repo.write(f"{PKG}/tests/helpers.py", "def expected():\n    return [[0, 7]]\n")
    repo.relock(PKG)
    base = repo.commit("helpers")
    repo.git("mv", f"{PKG}/tests/helpers.py", f"{PKG}/tests/helpers.md")
    report = repo.judge_paths(base, repo.commit("rename"))
    assert lane_and_verdict(report, f"{PKG}/tests/helpers.py") == (Lane.TEST, Verdict.REJECT)
    assert lane_and_verdict(report, f"{PKG}/tests/helpers.md") == (Lane.DOCS, Verdict.PASS)


def test_conftest_renamed_away_is_a_harness_removal(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    repo.write(f"{PKG}/tests/conftest.py", "import pytest\n")
    base = repo.commit("conftest")
    repo.git("mv", f"{PKG}/tests/conftest.py", f"{PKG}/tests/conftest.md")
    report = repo.judge_paths(base, repo.commit("rename"))
    assert lane_and_verdict(report, f"{PKG}/tests/conftest.py") == (Lane.HARNESS, Verdict.REJECT)


def test_test_file_moved_to_another_package_is_removed_from_the_first(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    old = f"{PKG}/tests/test_merge.py"
    repo.git("mv", old, "libs/codec/tests/test_merge.py")
    report = repo.judge_paths(base, repo.commit("move tests"))
    assert lane_and_verdict(report, old) == (Lane.TEST, Verdict.REJECT)
    entry = next(p for p in report.paths if p.path == old)
    assert entry.lane is Lane.TEST
    assert any(f.package == PKG and f.path == old for f in report.findings)


def test_ledger_moved_to_another_package_is_removed_from_the_first(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.git("mv", f"{PKG}/assumptions.yaml", "libs/codec/assumptions.yaml")
    report = repo.judge_paths(base, repo.commit("move the assumption register"))
    assert lane_and_verdict(report, f"{PKG}/assumptions.yaml") == (Lane.LEDGER, Verdict.REJECT)


def test_ledger_moved_below_its_package_root_is_a_removal(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.git("mv", f"{PKG}/seeds.jsonl", f"{PKG}/intervals/seeds.jsonl")
    report = repo.judge_paths(base, repo.commit("hide the seeds where the gate does not look"))
    assert lane_and_verdict(report, f"{PKG}/seeds.jsonl") == (Lane.LEDGER, Verdict.REJECT)


def test_docs_renamed_within_docs_pass(example_repo: tuple[GitRepo, str]) -> None:
    repo, _ = example_repo
    repo.write(f"{PKG}/docs/usage.md", "how to\n" * 20)
    base = repo.commit("docs")
    repo.git("mv", f"{PKG}/docs/usage.md", f"{PKG}/docs/guide.md")
    report = repo.gate(base, repo.commit("rename docs"))
    assert [p.path for p in report.paths] == [f"{PKG}/docs/guide.md"]
    assert report.verdict is Verdict.PASS


def test_guarded_production_module_renamed_in_its_package_stays_one_path(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    repo.write(f"{PKG}/intervals/util.py", "def width(r):\n    return r[1] - r[0]\n" * 3)
    base = repo.commit("util")
    repo.git("mv", f"{PKG}/intervals/util.py", f"{PKG}/intervals/ranges_util.py")
    report = repo.judge_paths(base, repo.commit("rename module"))
    assert [p.path for p in report.paths] == [f"{PKG}/intervals/ranges_util.py"]
    assert lane_and_verdict(report, f"{PKG}/intervals/ranges_util.py") == (
        Lane.PRODUCTION,
        Verdict.PASS,
    )
