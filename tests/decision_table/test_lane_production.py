"""SPEC §4: production path matched by no row -> reject (fail closed)."""

from __future__ import annotations

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict

MERGE = "libs/intervals/intervals/__init__.py"


def test_production_path_matched_by_no_row_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write("libs/codec/codec_fast.py", "def fast(x):\n    return x\n")
    report = repo.judge_paths(base, repo.commit("add unguarded module"))
    assert report.verdict_of("libs/codec/codec_fast.py") is Verdict.REJECT
    assert "unmeasured module" in report.findings[0].reason


def test_production_path_outside_every_package_is_rejected(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write("tools/migrate.py", "print('x')\n")
    report = repo.judge_paths(base, repo.commit("add a script"))
    assert report.verdict_of("tools/migrate.py") is Verdict.REJECT


def test_production_path_guarded_by_a_row_passes(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(MERGE, "merged = []", "merged = []  # accumulated output")
    report = repo.gate(base, repo.commit("comment"))
    assert report.verdict is Verdict.PASS
    entry = next(p for p in report.paths if p.path == MERGE)
    assert (entry.lane, entry.verdict) == (Lane.PRODUCTION, Verdict.PASS)
    assert any("guarded by row(s) merge_ranges_contract" in f.reason for f in report.findings)


def test_deleted_production_path_is_judged_by_the_parent_rows(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.remove("services/scheduler/scheduler/__init__.py")
    report = repo.gate(base, repo.commit("drop module"))
    assert report.verdict_of("services/scheduler/scheduler/__init__.py") is Verdict.PASS
