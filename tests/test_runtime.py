"""Runtime lanes (SPEC §4 rows that execute code): seeds, properties, partitions, relations."""

from __future__ import annotations

import dataclasses
import enum
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from gitrepo import TODAY, GitRepo
from oracle_gate.config.matrix import parse_matrix
from oracle_gate.model import Package, Verdict
from oracle_gate.repo.cache import cache_dir
from oracle_gate.repo.trees import GitTree
from oracle_gate.report import Report
from oracle_gate.runtime.canonical import NotPlainData, canonical_text, decode, encode
from oracle_gate.runtime.child import _search as child_search
from oracle_gate.runtime.judge import standing_freezes
from oracle_gate.runtime.sandbox import Runner, checkouts
from reports import reasons_of

PKG = "libs/intervals"
MERGE = f"{PKG}/intervals/__init__.py"
CODEC = "libs/codec/codec/__init__.py"


def _worktrees(repo: GitRepo) -> list[str]:
    return [line for line in repo.git("worktree", "list").splitlines() if line.strip()]


def test_dropping_the_sort_regresses_and_write_seeds_appends_the_counterexample_once(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(MERGE, "in sorted(ranges):", "in ranges:")
    before = repo.read(f"{PKG}/seeds.jsonl").splitlines()
    head = repo.commit("drop the sort")
    report = repo.gate(base, head, write_seeds=True)
    reasons = reasons_of(report)
    assert "relation R_perm regress" in reasons
    assert "partition P003" in reasons  # the unsorted representative row
    assert report.verdict is Verdict.REJECT
    assert len(_worktrees(repo)) == 1  # checkouts removed
    assert "new counterexample" in reasons
    after = repo.read(f"{PKG}/seeds.jsonl").splitlines()
    assert after[: len(before)] == before
    added = [json.loads(line) for line in after[len(before) :]]
    assert added and all(seed["expect"] == "hold" and seed["status"] == "active" for seed in added)
    assert f"recorded in {PKG}/seeds.jsonl" in reasons
    # A second run finds the same inputs already recorded: nothing is appended again.
    assert reasons_of(repo.gate(base, head, write_seeds=True)).count("new counterexample") >= 1
    assert repo.read(f"{PKG}/seeds.jsonl").splitlines() == after


def test_check_reports_a_new_counterexample_without_writing_into_the_tree(
    example_repo: tuple[GitRepo, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, base = example_repo
    repo.replace(MERGE, "in sorted(ranges):", "in ranges:")
    head = repo.commit("drop the sort")
    asked: list[dict[str, object]] = []
    served = Runner.run_served

    def recording(runner: Runner, request: dict[str, Any], *args: Any, **kw: Any) -> Any:
        asked.append(request)
        return served(runner, request, *args, **kw)

    monkeypatch.setattr(Runner, "run_served", recording)
    report = repo.gate(base, head)
    assert "new counterexample" in reasons_of(report)
    assert asked and not any("shrink" in request for request in asked)  # check shrinks
    assert "record it with check --write-seeds" in reasons_of(report)
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""


def test_a_search_told_not_to_shrink_stops_at_its_first_counterexample() -> None:
    from hypothesis import strategies as st

    def below_1000(x: int) -> None:
        assert x < 1000

    request: dict[str, Any] = {"examples": 100, "seconds": 10, "seed": 0}
    shrunk = child_search(below_1000, st.integers(0, 10**6), request)
    first = child_search(below_1000, st.integers(0, 10**6), {**request, "shrink": False})
    assert shrunk["status"] == first["status"] == "counterexample"
    assert shrunk["input"] == 1000
    assert first["input"] > 1000 and first["examples"] < shrunk["examples"]


def test_touching_ranges_treated_as_overlapping_fail_the_boundary_row(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(MERGE, "start < merged[-1][1]", "start <= merged[-1][1]")
    reasons = reasons_of(repo.gate(base, repo.commit("merge touching"), replay=False))
    assert "partition P002 (boundary: touching ranges stay apart) fails its contract" in reasons


def test_tautological_property_loses_falsifiability_even_when_noted(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(f"{PKG}/props.py", "    assert all(start <= end for start, end in out)\n", "")
    repo.replace(
        f"{PKG}/props.py",
        "out = merge_ranges(ranges)\n    assert all(prev",
        "out = merge_ranges(sorted(map(sorted, ranges)))\n    assert all(prev",
    )
    repo.note(PKG, base, "props.py")
    report = repo.gate(base, repo.commit("relax property"), replay=False)
    assert report.verdict_of(f"{PKG}/props.py") is Verdict.REJECT
    assert "property lost falsifiability" in reasons_of(report)


def test_unchanged_code_keeps_every_row_passing_and_counts_relation_pairs(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(MERGE, "merged = []", "merged = []  # output")
    head = repo.commit("comment")
    report = repo.gate(base, head)
    assert report.verdict is Verdict.PASS
    assert "no counterexample in" in reasons_of(report, Verdict.PASS)
    assert "relation R_perm holds" in reasons_of(report, Verdict.PASS)
    health = cache_dir(repo.path) / "health.jsonl"
    record = json.loads(health.read_text().splitlines()[-1])
    assert not (repo.path / ".oracle_gate").exists()
    assert record["relations"]["libs/intervals:R_perm"] == {
        "pairs": 2,
        "hold": 2,
        "regress": 0,
        "preexisting": 0,
    }
    assert record["locks_written"] is False
    assert (record["parent"], record["head"]) == (base, head)


def test_broken_codec_roundtrip_on_a_stored_seed_is_a_regression(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(CODEC, 'line.partition("=")', 'line.rpartition("=")')
    reasons = reasons_of(repo.gate(base, repo.commit("rpartition"), replay=False))
    assert "regression: remembered counterexample libs/codec/seeds.jsonl:1 fails again" in reasons


def test_known_bad_seed_passing_is_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(
        CODEC,
        "        if key in record:\n            raise",
        "        if False:\n            raise",
    )
    repo.replace(
        "libs/codec/props.py",
        "    record = decode(text)\n",
        "    record = decode(text)\n    text = encode(record)\n",
    )
    repo.note("libs/codec", base, "props.py")
    reasons = reasons_of(repo.gate(base, repo.commit("tolerate duplicates"), replay=False))
    assert "known-bad input libs/codec/seeds.jsonl:2 now passes" in reasons


def test_patched_eq_that_always_says_true_is_still_rejected(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(
        MERGE,
        "    return merged\n",
        (
            "    return _Fake()\n\n\nclass _Fake(list):\n    def __eq__(self, other):\n"
            "        return True\n\n    __hash__ = None\n"
        ),
    )
    report = repo.gate(base, repo.commit("fake eq"), replay=False)
    assert "partition P001 (boundary: empty input yields empty output) fails" in reasons_of(report)


FLAKY = """\
SUBJECT = "flaky:letters"
PARTITIONS = [
    {"id": "F001", "cls": "set order", "kind": "representative", "input": "abcdefgh",
     "relation": "letters in some order", "contract": lambda out: len(out) == 8, "assumptions": []},
]
"""
BROKEN_ON_PARENT = """\
SUBJECT = "flaky:double"
RELATIONS = [
    {"id": "R_add", "inputs": [1, 2], "transform": lambda x: x + 1,
     "compare": lambda out, x: out == 2 * x + 1},
]
"""


def _flaky_package(repo: GitRepo, freeze: str = "frozen: []\n") -> str:
    repo.write(
        "pkg/invariants.yaml",
        'version: 1\nrows:\n  - id: r\n    globs: ["flaky.py"]\n'
        '    partitions: ["partitions.py:PARTITIONS"]\n    relations: ["relations.py:RELATIONS"]\n',
    )
    repo.write(
        "pkg/flaky.py",
        "def letters(text):\n    return list(set(text))\n\n\ndef double(x):\n    return 2 * x\n",
    )
    repo.write("pkg/partitions.py", FLAKY)
    repo.write("pkg/relations.py", BROKEN_ON_PARENT)
    repo.write("pkg/flake_freeze.yaml", freeze + "budget: 2\n")
    return repo.commit("flaky package")


def test_flaky_partition_row_is_isolated_by_input_hash(repo: GitRepo) -> None:
    base = _flaky_package(repo)
    repo.replace("pkg/flaky.py", "return 2 * x\n", "return x + x\n")
    reasons = reasons_of(repo.gate(base, repo.commit("touch")))
    assert (
        "partition F001 gives different results across 5 reruns: flake isolated as (F001:"
        in reasons
    )


def test_frozen_flake_with_replacement_row_is_reported_as_debt(repo: GitRepo) -> None:
    key = "F001:" + _input_hash("abcdefgh")
    freeze = (
        f"frozen:\n  - row: F001\n    input_hash: {key.split(':')[1]}\n    reason: set order\n"
        "    expires: '2027-01-31'\n    owner: platform\n    replacement_row: F002\n"
    )
    base = _flaky_package(repo, freeze)
    repo.replace("pkg/flaky.py", "return 2 * x\n", "return x + x\n")
    report = repo.gate(base, repo.commit("touch"))
    assert f"frozen ({key}, replaced by F002)" in reasons_of(report, Verdict.PREEXISTING)


def test_relation_failing_on_parent_too_is_preexisting_not_blocking(repo: GitRepo) -> None:
    base = _flaky_package(repo)
    repo.replace("pkg/partitions.py", "set order", "set  order")  # keep the flake out of it
    repo.replace("pkg/flaky.py", "return list(set(text))", "return sorted(set(text))")
    repo.note("pkg", base, "partitions.py")
    report = repo.gate(base, repo.commit("sort letters"))
    assert "relation R_add fails on parent too" in reasons_of(report, Verdict.PREEXISTING)
    assert report.verdict is Verdict.PASS


def _input_hash(value: object) -> str:
    from oracle_gate.runtime.judge import input_hash

    return input_hash(encode(value))


def _partition_freeze(expires: str = "2027-01-31", count: int = 1) -> str:
    entry = (
        "  - row: F001\n    input_hash: {hash}\n    reason: set order\n"
        "    expires: '{expires}'\n    owner: platform\n    replacement_row: F002\n"
    )
    hashes = [_input_hash("abcdefgh").split(":")[-1]] + [f"a{n:015x}" for n in range(1, count)]
    return "frozen:\n" + "".join(entry.format(hash=h, expires=expires) for h in hashes)


@pytest.mark.parametrize(
    ("freeze", "why"),
    [
        (_partition_freeze(expires="2026-11-29"), "flake_freeze.yaml expired on 2026-11-29"),
        (_partition_freeze(count=3), "excuses nothing: 3 frozen entries exceed the budget of 2"),
    ],
    ids=["expired", "over-budget"],
)
def test_a_partition_flake_frozen_by_a_freeze_that_no_longer_holds_is_rejected(
    repo: GitRepo, freeze: str, why: str
) -> None:
    base = _flaky_package(repo, freeze)
    repo.replace("pkg/flaky.py", "return 2 * x\n", "return x + x\n")
    report = repo.gate(base, repo.commit("touch"), replay=False)
    assert f"flake isolated as (F001:{_input_hash('abcdefgh')}); its freeze in pkg/" in (
        reasons_of(report)
    )
    assert why in reasons_of(report)
    assert report.verdict is Verdict.REJECT


def test_without_a_date_freezes_do_not_expire_but_the_budget_still_holds(repo: GitRepo) -> None:
    """The Bazel gate judges no expiry (today's date is not an input of its cached action);
    a ledger over its budget excuses nothing there either."""
    expired = _partition_freeze(expires="2026-11-29")
    _flaky_package(repo, expired)
    tree = GitTree(repo.path, repo.git("rev-parse", "HEAD").strip())
    matrix = (repo.path / "pkg/invariants.yaml").read_bytes()
    package = Package("pkg", parse_matrix(matrix, "pkg/invariants.yaml"))
    key = f"F001:{_input_hash('abcdefgh').split(':')[-1]}"
    assert key in standing_freezes(tree, package, None).excused
    assert "expired on 2026-11-29" in standing_freezes(tree, package, TODAY).refused[key]
    repo.write("pkg/flake_freeze.yaml", _partition_freeze(count=3) + "budget: 2\n")
    tree = GitTree(repo.path, repo.commit("three freezes"))
    assert "exceed the budget of 2" in standing_freezes(tree, package, None).refused[key]


def test_a_partition_flake_frozen_in_the_same_patch_is_not_excused(repo: GitRepo) -> None:
    """The freeze is the agent's own word: it applies from the next patch on, even with
    a triage trailer."""
    base = _flaky_package(repo)
    repo.write("pkg/flake_freeze.yaml", _partition_freeze() + "budget: 2\n")
    repo.replace("pkg/flaky.py", "return 2 * x\n", "return x + x\n")
    head = repo.commit("touch and freeze", {"Freeze-Triage": "grace@example.com"})
    report = repo.gate(base, head, replay=False)
    assert (
        "the freeze this patch adds in pkg/flake_freeze.yaml excuses nothing until it has landed"
        in reasons_of(report)
    )
    assert "reported as debt" not in reasons_of(report, Verdict.PREEXISTING)
    assert report.verdict is Verdict.REJECT


def test_accepted_assumption_without_boundary_row_is_decorative(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(f"{PKG}/partitions.py", '"assumptions": ["A001"]', '"assumptions": []')
    repo.replace(f"{PKG}/partitions.py", '"assumptions": ["A001"]', '"assumptions": []')
    repo.note(PKG, base, "partitions.py")
    reasons = reasons_of(repo.gate(base, repo.commit("unlink assumption"), replay=False))
    assert (
        "assumption A001 is accepted but no boundary or invalid partition row tests it" in reasons
    )


def test_assumption_citing_a_vanished_symbol_is_flagged(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.replace(MERGE, "def merge_ranges(ranges):", "def merge(ranges):")
    repo.append(MERGE, "\n\nmerge_ranges_v2 = merge\n")
    reasons = reasons_of(repo.gate(base, repo.commit("rename"), replay=False))
    assert "cites intervals.merge_ranges, which the head tree does not define" in reasons


def _hanging_patch(repo: GitRepo, budget_seconds: float) -> tuple[str, str]:
    """A package whose one partition row hangs after the patch; returns (base, head).

    The repository's timeout floor is 0.5 s, so a small budget times out quickly.
    """
    repo.write("oracle-gate.toml", "timeout-floor = 0.5\n")
    repo.write(
        "pkg/invariants.yaml",
        'version: 1\nrows:\n  - id: r\n    globs: ["slow.py"]\n'
        '    partitions: ["partitions.py:PARTITIONS"]\n'
        f"    budget: {{seconds: {budget_seconds}}}\n",
    )
    repo.write("pkg/slow.py", "def run(x):\n    return x\n")
    repo.write(
        "pkg/partitions.py",
        'SUBJECT = "slow:run"\nPARTITIONS = [{"id": "S1", "kind": '
        '"representative", "input": 1, "contract": lambda out: out == 1}]\n',
    )
    base = repo.commit("slow package")
    repo.replace("pkg/slow.py", "return x", "import time\n    time.sleep(60)\n    return x")
    return base, repo.commit("hang")


def test_runner_timeout_rejects_and_leaves_no_worktree(repo: GitRepo) -> None:
    base, head = _hanging_patch(repo, budget_seconds=0.2)
    started = time.monotonic()
    report = repo.gate(base, head)
    assert "timed out after 0.5s" in reasons_of(report)
    assert time.monotonic() - started < 45
    assert len(_worktrees(repo)) == 1


def _plain_package(repo: GitRepo, register: str = "") -> str:
    """A package whose one row has globs and no oracle to run; ``register`` is its
    assumption register, if any."""
    repo.write("pkg/invariants.yaml", 'version: 1\nrows:\n  - id: r\n    globs: ["plain.py"]\n')
    repo.write(
        "pkg/plain.py", "def double(x):\n    return 2 * x\n\n\ndef triple(x):\n    return 3 * x\n"
    )
    if register:
        repo.write("pkg/assumptions.yaml", register)
    return repo.commit("plain package")


def _worktrees_added(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The commits ``git worktree add`` checks out from now on, as they are added."""
    added: list[str] = []
    original = checkouts.git

    def recorded(repo: Path, *args: str) -> str:
        if args[:2] == ("worktree", "add"):
            added.append(args[-1])
        return original(repo, *args)

    monkeypatch.setattr(checkouts, "git", recorded)
    return added


def test_rows_with_no_child_to_run_check_out_no_tree(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the replay, a row of globs alone starts no child: no worktree is made (a
    check of ten thousand modules spent seconds of git on two), and the row is judged."""
    base = _plain_package(repo)
    repo.replace("pkg/plain.py", "2 * x", "x + x")
    added = _worktrees_added(monkeypatch)
    report = repo.gate(base, repo.commit("touch"), replay=False)
    assert "guarded by row(s) r" in reasons_of(report, Verdict.PASS)
    assert added == []
    assert len(_worktrees(repo)) == 1


_REGISTER = (
    "version: 1\nitems:\n  - id: A001\n    symbol: plain.{symbol}\n"
    '    precondition: "x is an int"\n    evidence: "2 * x"\n    status: accepted\n'
)


def test_an_assumption_symbol_is_resolved_in_a_checkout_of_head(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cited symbol is a child's to resolve, so its package's rows get checkouts with
    files though no row has an oracle: one the head still defines resolves."""
    base = _plain_package(repo, _REGISTER.format(symbol="double"))
    repo.replace("pkg/plain.py", "2 * x", "x + x")
    added = _worktrees_added(monkeypatch)
    reasons = reasons_of(repo.gate(base, repo.commit("touch"), replay=False))
    assert "assumption A001 is accepted but no boundary or invalid partition" in reasons
    assert "which the head tree does not define" not in reasons
    assert len(added) == 2


def test_an_assumption_symbol_the_patch_removes_is_rejected(repo: GitRepo) -> None:
    base = _plain_package(repo, _REGISTER.format(symbol="triple"))
    repo.replace("pkg/plain.py", "\n\n\ndef triple(x):\n    return 3 * x\n", "\n")
    reasons = reasons_of(repo.gate(base, repo.commit("drop triple"), replay=False))
    assert "cites plain.triple, which the head tree does not define" in reasons


# A shell starts background jobs with SIGINT ignored, and Python then keeps it
# ignored (as ``nohup`` intends): the gate is started with Ctrl-C's own handler,
# so the test does not depend on how the test run itself was started.
_WITH_CTRL_C = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from oracle_gate.cli import entry; entry()"
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_run_removes_the_worktrees(repo: GitRepo, signum: int) -> None:
    base, head = _hanging_patch(repo, budget_seconds=60)
    command = ["check", "--repo", str(repo.path), "--base", base, "--head", head]
    gate = subprocess.Popen(
        [sys.executable, "-c", _WITH_CTRL_C, *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Generous waits: on a loaded CI machine reading both trees and starting the
    # replay can take longer than the 30 s this once allowed.
    deadline = time.monotonic() + 150
    while len(_worktrees(repo)) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_worktrees(repo)) == 3, "the gate never checked out both trees"
    gate.send_signal(signum)
    out, err = gate.communicate(timeout=120)
    assert gate.returncode == 130, out + err
    assert "oracle-gate: interrupted" in err
    assert len(_worktrees(repo)) == 1


@pytest.mark.parametrize(
    "value",
    [[1, (2, 3)], {"a": {1, 2}}, b"\x00\xff", 1.5, float("inf"), 10**30, None, True, "é"],
)
def test_canonical_form_round_trips_plain_data(value: object) -> None:
    tagged = encode(value)
    assert canonical_text(encode(decode(tagged))) == canonical_text(tagged)


def test_canonical_form_keeps_tuples_and_lists_apart() -> None:
    assert canonical_text(encode([1, 2])) != canonical_text(encode((1, 2)))
    assert canonical_text(encode(True)) != canonical_text(encode(1))


class _Level(enum.IntEnum):
    LOW = 1


@dataclasses.dataclass
class _Point:
    x: int


class _Same(list):  # type: ignore[type-arg]
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]


def test_plain_canonical_form_takes_data_and_refuses_objects() -> None:
    """What may cross between a property's oracle and production processes."""
    assert encode([_Level.LOW, _Same([1])], plain=True) == encode([1, [1]])
    assert encode(_Same([1]))[0] == "obj"  # without plain, the class is kept
    for value, name in ((_Point(1), "_Point"), ({"k": [len]}, "builtin_function_or_method")):
        with pytest.raises(NotPlainData) as refused:
            encode(value, plain=True)
        assert refused.value.type_name.endswith(name)


def test_check_runs_rows_from_a_thread_that_is_not_the_main_thread(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.replace(MERGE, "merged = []", "merged = []  # output")
    head = repo.commit("comment")
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(repo.gate(base, head)))
    worker.start()
    worker.join(timeout=300)
    assert len(outcome) == 1 and isinstance(outcome[0], Report), outcome
    assert outcome[0].verdict is Verdict.PASS
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert len(_worktrees(repo)) == 1
