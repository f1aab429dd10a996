"""runtime/reads.py: a docs or other file the parent's tests read at run time selects
their package, so a patch that changes only that file is replayed and its rows run."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from gitrepo import GitRepo
from oracle_gate.cli import main
from oracle_gate.model import Lane, Verdict
from oracle_gate.pipeline import Request, stage
from oracle_gate.repo.cache import cache_dir
from oracle_gate.report import Report
from oracle_gate.runtime.reads import READS_FILE, load_reads

# Production reads its limit from the repository's docs/ under a computed name.
MOD = """import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def limit():
    with open(os.path.join(ROOT, "docs", "lim" + "its.json")) as handle:
        return json.load(handle)["limit"]
"""
TESTS = "from mod import limit\n\n\ndef test_limit():\n    assert limit() == 3\n"


def _package(repo: GitRepo) -> str:
    repo.write(
        "pkg/invariants.yaml",
        'version: 1\ntests: ["tests/test_*.py"]\nrows:\n  - id: r\n    globs: ["mod.py"]\n'
        "    budget: {seconds: 30}\n",
    )
    repo.write("pkg/flake_freeze.yaml", "frozen: []\nbudget: 2\n")
    repo.write("oracle-gate.toml", "timeout-floor = 1\n")
    repo.write("pkg/mod.py", MOD)
    repo.write("pkg/tests/test_mod.py", TESTS)
    repo.write("pkg/README.md", "# pkg\n")
    repo.write("docs/limits.json", '{"limit": 3}\n')
    repo.relock("pkg")
    return repo.commit("package reading docs/limits.json")


def _patch(repo: GitRepo, base: str, name: str, path: str, text: str) -> Report:
    repo.git("checkout", "-q", "-b", name, base)
    repo.write(path, text)
    return repo.gate(base, repo.commit(name))


def _lane(report: Report, path: str) -> Lane:
    return next(p.lane for p in report.paths if p.path == path)


def _recorded(repo: GitRepo, base: str) -> None:
    """An honest code patch on ``base``: its replay records the baseline, and the reads."""
    first = _patch(
        repo,
        base,
        "comment",
        "pkg/mod.py",
        MOD.replace("import json\n", "import json  # data\n", 1),
    )
    assert first.verdict is Verdict.PASS, [f.reason for f in first.findings]
    reads = json.loads((cache_dir(repo.path) / READS_FILE).read_text())
    assert "docs/limits.json" in reads["pkg"]["opened"]


def test_a_patch_of_only_a_docs_file_production_reads_is_replayed_and_rejected(
    repo: GitRepo,
) -> None:
    base = _package(repo)
    _recorded(repo, base)
    report = _patch(repo, base, "limit", "docs/limits.json", '{"limit": 4}\n')
    assert _lane(report, "docs/limits.json") is Lane.DOCS
    assert report.verdict is Verdict.REJECT
    assert any(
        "replay regress: tests/test_mod.py::test_limit passes" in f.reason for f in report.findings
    ), [f.reason for f in report.findings]


def test_a_docs_file_no_test_reads_stays_quiet(repo: GitRepo) -> None:
    base = _package(repo)
    _recorded(repo, base)
    report = _patch(repo, base, "readme", "pkg/README.md", "# pkg\n\nMore words.\n")
    assert report.verdict is Verdict.PASS
    assert report.docs_only
    assert not [f for f in report.findings if f.reason.startswith("replay")]


def test_a_read_docs_file_whose_change_the_tests_accept_merges(repo: GitRepo) -> None:
    base = _package(repo)
    _recorded(repo, base)
    report = _patch(repo, base, "spaces", "docs/limits.json", '{"limit":   3}\n')
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]
    assert any(
        f.reason.startswith("replay: the parent's 1 passing test(s) also pass")
        for f in report.findings
    )


@pytest.mark.parametrize(
    ("path", "text", "selected"),
    [
        ("docs/limits.json", '{"limit": 4}\n', ["pkg"]),  # the tests read it: selected
        ("pkg/README.md", "# pkg\n\nMore words.\n", []),  # no test reads it: quiet
    ],
)
def test_select_selects_what_check_runs_for_a_file_read_at_run_time(
    repo: GitRepo,
    capsys: pytest.CaptureFixture[str],
    path: str,
    text: str,
    selected: list[str],
) -> None:
    """``oracle-gate select`` and ``check`` share one pipeline: a docs file the parent's
    tests read is selected by both (select once left the hint out and printed nothing)."""
    base = _package(repo)
    _recorded(repo, base)
    repo.git("checkout", "-q", "-b", "select", base)
    repo.write(path, text)
    head = repo.commit("select")
    staged = stage(Request(repo.path, base, head, datetime.date(2026, 12, 1)))
    assert [package.path for package in staged.selection.packages] == selected
    capsys.readouterr()
    assert main(["select", "--repo", str(repo.path), "--base", base, "--head", head]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"selected {len(selected)} package(s)"), printed
    assert ("pkg  r" in printed) == bool(selected), printed


def test_an_unreadable_hint_selects_nothing_more_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / READS_FILE
    target.write_text("{not json")
    assert load_reads(target) == {}
    assert f"{target} is ignored" in caplog.text
    assert load_reads(tmp_path / "absent.json") == {}


def test_select_selects_the_package_whose_tests_read_a_file_the_patch_moves_away(
    repo: GitRepo,
) -> None:
    """A way around the hint: move the read file instead of editing it (production then
    reads nothing). Its old path is what the tests opened, so the package is selected."""
    base = _package(repo)
    _recorded(repo, base)
    repo.git("checkout", "-q", "-b", "move", base)
    repo.git("mv", "docs/limits.json", "docs/old-limits.json")
    head = repo.commit("move the limits away")
    staged = stage(Request(repo.path, base, head, datetime.date(2026, 12, 1)))
    assert [package.path for package in staged.selection.packages] == ["pkg"]
