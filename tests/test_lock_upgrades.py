"""Upgrades of oracle-gate reject nothing honest: a lock written by an earlier release (built
here from an earlier commit of this repository) is judged through the parent this gate
computes itself, ``lock`` tells entries the algorithm moved from entries the tree moved, and a
lock from a newer gate is a one-line error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from blake3 import blake3

from backends import BACKENDS
from gitrepo import GitRepo, run
from oracle_gate.config.lockfile import CURRENT, parse_lock
from oracle_gate.model import Lane, Verdict
from oracle_gate.surface import SURFACE_VERSION

ROOT = Path(__file__).resolve().parent.parent
# The parent of 49d383e ("A test file is oracle as a whole module"): its surface units
# were test functions and helpers only, and it wrote lock format 1.
EARLIER_RELEASE = "169d3d666ba827af28c8206a8fe7ecb644ffdf2f"
PKG = "libs/intervals"
LOCK = f"{PKG}/oracle_gate.lock"
FIXTURE = f"{PKG}/testdata/ranges/unsorted.json"
# The canonical text of tests/surface_corpus, per SURFACE_VERSION. A change to the text
# without a new version fails here: raise SURFACE_VERSION, and record the new digest.
CORPUS_DIGESTS = {
    1: "c8babf2676ebb8c09e60a1fb64e1d771549e690b97e71ec9013297bdd6f965de",
    2: "c6d141acb30fd83af414dca98afaa8164601745dcc0a487fdcfa2ac7437a20f9",
}
# What the corpus files do not hold: annotations, defaults and decorators that run code
# (written since version 2).
EXTRA = b'''"""Module docstring."""
from __future__ import annotations

import pytest

CASES: list[int] = [1, 2]


@pytest.mark.parametrize("n", CASES)
def test_n(n: int = len(CASES), *, flag: bool = True) -> pytest.skip("x"):
    """Docstring."""
    local: int = n
    assert local in CASES


class TestThing:
    value: int = 3

    def test_value(self: "TestThing") -> None:
        assert self.value == 3
'''


def test_surface_version_is_raised_whenever_the_canonical_text_changes() -> None:
    corpus = sorted((ROOT / "tests" / "surface_corpus").glob("*.py.txt"))
    inputs = [(path.read_bytes(), path.name) for path in corpus] + [(EXTRA, "extra.py")]
    digests = set()
    for module in BACKENDS:
        text = json.dumps(module.extract_units_many(inputs), sort_keys=True)
        digests.add(blake3(text.encode()).hexdigest())
    assert digests == {CORPUS_DIGESTS[SURFACE_VERSION]}, (
        "the canonical text changed: raise SURFACE_VERSION in surface.py and record "
        f"{digests} for it here"
    )


@pytest.fixture(scope="module")
def earlier_gate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``python/`` tree of an earlier release, runnable with PYTHONPATH (pure Python)."""
    found = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{EARLIER_RELEASE}^{{commit}}"],
        capture_output=True,
        timeout=60,
        check=False,
    )
    if found.returncode != 0:
        pytest.skip(f"commit {EARLIER_RELEASE[:12]} is not in this clone's history (shallow?)")
    out = tmp_path_factory.mktemp("earlier-gate")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", EARLIER_RELEASE, "python/"],
        capture_output=True,
        timeout=120,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, timeout=120, check=True)
    return out / "python"


def _earlier(gate: Path, repo: GitRepo, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(gate), "ORACLE_GATE_IMPL": "python"}
    return subprocess.run(
        [sys.executable, "-m", "oracle_gate", *args, "--repo", str(repo.path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=repo.path,
        timeout=300,
        check=False,
    )


@pytest.fixture
def locked_earlier(earlier_gate: Path, example_repo: tuple[GitRepo, str]) -> tuple[GitRepo, str]:
    """The example monorepo with libs/intervals locked by the earlier release; (repo, base)."""
    repo, _ = example_repo
    repo.remove(LOCK)  # this gate's; the earlier release writes its own
    done = _earlier(earlier_gate, repo, "lock", "--write", PKG)
    assert done.returncode == 0, done.stderr
    lock = parse_lock((repo.path / LOCK).read_bytes(), LOCK)
    assert lock.algorithms is None  # format 1: nothing recorded
    return repo, repo.commit("locked by the earlier release")


def test_the_earlier_release_really_computed_other_digests(
    locked_earlier: tuple[GitRepo, str],
) -> None:
    repo, _ = locked_earlier
    done = run("lock", PKG, "--repo", str(repo.path))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"note {LOCK}: written by an oracle-gate that did not record")
    assert "relock with 'oracle-gate lock --write libs/intervals' at your convenience" in lines[0]
    stale = [line for line in lines if line.startswith("stale ")]
    assert stale and all("by the algorithm, not by the tree" in line for line in stale)
    assert not [line for line in lines if line.startswith("FAIL")]
    assert lines[-1] == f"ok {LOCK}"


def test_an_honest_change_merges_with_the_earlier_lock(locked_earlier: tuple[GitRepo, str]) -> None:
    repo, base = locked_earlier
    repo.replace(
        f"{PKG}/intervals/__init__.py", "def merge_ranges(", "def merge_ranges(  # merged\n    "
    )
    report = repo.gate(base, repo.commit("agent: an honest refactor"))
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]
    notice = next(f for f in report.findings if f.path == LOCK)
    assert notice.verdict is Verdict.PASS
    assert (
        "relock with 'oracle-gate lock --write libs/intervals' at your convenience" in notice.reason
    )


def test_a_fixture_edit_is_still_rejected_with_the_earlier_lock(
    locked_earlier: tuple[GitRepo, str],
) -> None:
    repo, base = locked_earlier
    repo.replace(
        FIXTURE,
        "[",
        "[[9, 10], ",
    )
    report = repo.judge_paths(base, repo.commit("agent: edit the expected output"))
    assert report.verdict_of(FIXTURE) is Verdict.REJECT
    lock = next(f for f in report.findings if f.path == LOCK)
    assert lock.verdict is Verdict.REJECT
    assert (
        "locked entries moved since the parent (fixtures testdata/ranges/unsorted.json"
        in lock.reason
    )


def test_a_relock_by_this_gate_moves_no_entry_and_merges(
    locked_earlier: tuple[GitRepo, str],
) -> None:
    repo, base = locked_earlier
    repo.relock(PKG)
    assert parse_lock((repo.path / LOCK).read_bytes(), LOCK).algorithms == CURRENT
    report = repo.gate(base, repo.commit("relock with this oracle-gate"))
    assert report.verdict is Verdict.PASS
    assert report.verdict_of(LOCK) is Verdict.PASS
    assert "no entry moved" in next(f for f in report.findings if f.path == LOCK).reason


def test_a_noted_fixture_change_relocked_by_this_gate_merges(
    locked_earlier: tuple[GitRepo, str],
) -> None:
    repo, base = locked_earlier
    repo.replace(FIXTURE, "[", "[[9, 10], ")
    repo.note(PKG, base, "testdata/ranges/unsorted.json")
    repo.relock(PKG)
    report = repo.judge_paths(base, repo.commit("a reviewed fixture change"))
    assert report.verdict_of(LOCK) is Verdict.HUMAN_NOTED
    assert report.verdict_of(FIXTURE) is Verdict.HUMAN_NOTED


def test_a_lock_the_patch_writes_with_an_earlier_gate_is_rejected_with_the_fix(
    earlier_gate: Path, locked_earlier: tuple[GitRepo, str]
) -> None:
    repo, base = locked_earlier
    repo.replace(FIXTURE, "[", "[[9, 10], ")
    repo.note(PKG, base, "testdata/ranges/unsorted.json")
    assert _earlier(earlier_gate, repo, "lock", "--write", PKG).returncode == 0
    report = repo.judge_paths(base, repo.commit("relocked with the old gate"))
    lock = next(f for f in report.findings if f.path == LOCK)
    assert lock.verdict is Verdict.REJECT and lock.lane is Lane.LOCK
    assert "write it with 'oracle-gate lock --write libs/intervals'" in lock.reason


def test_lock_tells_a_tree_change_from_an_algorithm_change(
    locked_earlier: tuple[GitRepo, str],
) -> None:
    repo, _ = locked_earlier
    repo.replace(FIXTURE, "[", "[[9, 10], ")  # in the working tree, not committed
    repo.append(f"{PKG}/tests/test_merge.py", "\n\ndef test_more():\n    assert True\n")
    done = run("lock", PKG, "--repo", str(repo.path))
    assert done.returncode == 1
    fails = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert fails == [f"FAIL {FIXTURE}: fixtures entry changed since {LOCK} was written"]
    assert any(line.startswith("stale ") for line in done.stdout.splitlines())


def test_without_history_lock_cannot_tell_and_says_to_relock(
    locked_earlier: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, _ = locked_earlier
    copy = tmp_path / "exported"
    archive = subprocess.run(["git", "-C", str(repo.path), "archive", "HEAD"],
                             capture_output=True, timeout=60, check=True)  # fmt: skip
    copy.mkdir()
    subprocess.run(["tar", "-x", "-C", str(copy)], input=archive.stdout, timeout=60, check=True)
    done = run("lock", PKG, "--repo", str(copy))
    assert done.returncode == 1
    assert "no git history tells whether the algorithm or the tree moved it" in done.stdout


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 3}, "lock format 3) than this one"),
        (
            {"algorithms": {"digest": 1, "surface": SURFACE_VERSION + 1}},
            f"surface v{SURFACE_VERSION + 1}, digest v1) than this one",
        ),
    ],
)
def test_a_lock_from_a_newer_gate_is_a_one_line_gate_error(
    example_repo: tuple[GitRepo, str], change: dict[str, object], message: str
) -> None:
    repo, base = example_repo
    lock = json.loads((repo.path / LOCK).read_text())
    lock.update(change)
    (repo.path / LOCK).write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    for args in (("lock", PKG), ("check", "--base", base)):
        if args[0] == "check":
            repo.replace(
                f"{PKG}/intervals/__init__.py", "def merge_ranges(", "def merge_ranges(  # x\n    "
            )
            repo.commit("a newer gate's lock")
        done = run(*args, "--repo", str(repo.path))
        assert done.returncode == 2, done.stdout
        (line,) = done.stderr.strip().splitlines()
        assert f"{LOCK}:" in line and message in line and "upgrade oracle-gate" in line
