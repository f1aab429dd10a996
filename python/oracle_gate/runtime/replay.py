"""Trusted replay: the parent's tests against the head's production code.

For each selected package, the parent's test files, test-support files,
fixtures and harness (``conftest.py`` and pytest configuration, in the package
and in the directories above it) are written over a checkout of the head, and
pytest runs them there in a child (``sandbox.Runner``). The same tests on the
parent's checkout give the baseline:

- passes on parent, fails on head (twice each): ``regress``, naming the node id;
- fails on parent: ``preexisting``;
- differs between two runs on the same code (the head always runs twice, one
  run after the other): a flake, keyed by node id and worded as a partition
  row's flake, a reject;
- the head's second run is in the shifted environment (``runtime/variants.py``:
  the clock a year and more ahead, another host name, a shell's variables): a
  test that passes in the usual run and fails there twice, where the parent's
  code passes there, depends on how it is run, a reject; one that fails there
  on the parent's code too is the test's own dependence, not the patch's;
- frozen in the *parent's* ``flake_freeze.yaml`` by a freeze that holds on the
  gate's date and within the ledger's budget: runs, never decides (a failure
  or flake is reported as debt); an expired or over-budget freeze, or one the
  patch adds, excuses nothing;
- a run that hits the package's time budget is a reject, never a pass.

The head's own new test files run too, on the head's code, and are
reported as agent tests (they never decide).
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from oracle_gate.config.ledgers import FREEZE_FILE
from oracle_gate.config.matrix import MATRIX_FILE, parse_matrix
from oracle_gate.globs import matches_any
from oracle_gate.model import CONFTEST, Finding, Lane, Package, Verdict
from oracle_gate.repo.trees import GitTree
from oracle_gate.runtime.baseline import (
    Baseline,
    BaselineCache,
    Recorded,
    files_digest,
    key_material,
)
from oracle_gate.runtime.child import PASSED_HOLDING, UNSENDABLE
from oracle_gate.runtime.impact import (
    Change,
    ChangeKind,
    Impact,
    entries,
    file_change,
    listing_changes,
)
from oracle_gate.runtime.judge import (
    Freezes,
    ReplayHealth,
    RowEnv,
    RuntimeStats,
    flake_reason,
    standing_freezes,
)
from oracle_gate.runtime.reads import note_reads
from oracle_gate.runtime.sandbox import RunnerFailure
from oracle_gate.runtime.split_hints import SplitHints, hint_key

__all__ = ["ReplayOptions", "ReplayTrees", "replay_packages"]

# pytest configuration and plugins that apply to a package's tests from where they sit.
_HARNESS_NAMES = frozenset({"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"})
# The harness files that also hold what is not pytest's (metadata, dependencies, linters).
CONFIG_NAMES = frozenset({"pyproject.toml", "setup.cfg", "tox.ini"})
Outcomes = dict[str, str]
# The outcome key of a pytest run that could not finish (a conftest that does not import).
SESSION = "<session>"
# pytest's exit codes for an internal error and a usage error.
_UNFINISHED = (3, 4)
_SHOWN = 3
# The replay's budget, unless set: this many times the parent's baseline, plus a minute.
_BUDGET_FACTOR = 5
_BUDGET_EXTRA = 60.0
# More head runs of a frozen test that failed both: only one failing every run is broken.
_FROZEN_RUNS = 5
# The baseline's own time limit, unless the replay's budget is set.
_BASELINE_SECONDS = 1800.0
_BUDGET_SETTING = (
    "replay-seconds in oracle-gate.toml ([tool.oracle-gate]), or replay: {seconds} in the "
    "package's invariants.yaml"
)


@dataclass(frozen=True)
class ReplayTrees:
    """Both commits as git objects and as checkouts (the rows' checkouts, reused)."""

    parent: GitTree
    head: GitTree
    parent_dir: Path
    head_dir: Path


@dataclass(frozen=True)
class ReplayOptions:
    """How the replay runs: its time budget (``replay-seconds``; None derives it from the
    parent's baseline), where baselines are kept, and which test files' changes a human
    note explains."""

    seconds: float | None = None
    cache: BaselineCache = field(default_factory=BaselineCache)
    # A test file -> "review by <owners>" when a note that counts explains the patch's change
    # to it, else "": a regress of a test a human changed on purpose is human_noted.
    noted: Callable[[str], str] = field(default=lambda path: "")
    # The CONFIG_NAMES files whose change the classifier put in no oracle lane (a version
    # bump, a dependency pin): nothing pytest reads moved, so the replay tree keeps the
    # head's, which the head's code may read (its own version, say).
    head_config: frozenset[str] = frozenset()
    # Where each baseline's run-time reads are kept (``runtime/reads.py``), if anywhere.
    reads_file: Path | None = None
    # What earlier checks learnt of each package's split run (``runtime/split_hints.py``).
    hints: SplitHints = field(default_factory=SplitHints)


def _listed(items: list[str]) -> str:
    more = f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def _ancestors(directory: str) -> list[str]:
    found = [""]
    parts = directory.split("/") if directory else []
    found += ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return found


def test_files(tree: GitTree, package: Package) -> tuple[list[str], list[str]]:
    """(test files, every file the tests stand on: tests, support, fixtures, harness)."""
    matrix = package.matrix
    above = {
        posixpath.join(d, name) if d else name
        for d in _ancestors(package.path)[:-1]
        for name in _HARNESS_NAMES
    }
    tests: list[str] = []
    stands_on: list[str] = []
    prefix = f"{package.path}/" if package.path else ""
    for path in tree.files():
        if path in above:
            stands_on.append(path)
            continue
        if not path.startswith(prefix):
            continue
        relative = path[len(prefix) :]
        if matches_any(relative, matrix.tests):
            tests.append(path)
            stands_on.append(path)
        elif (
            matrix.is_test_support(relative)
            or matrix.is_fixture(relative)
            or posixpath.basename(relative) in _HARNESS_NAMES
        ):
            stands_on.append(path)
    return tests, stands_on


def hidden_from_production(
    checkout: Path, package: Package, test_side: Sequence[str]
) -> list[Path]:
    """The package's test side in ``checkout`` as few paths as may be: every directory that
    holds nothing else, then the other files one by one; conftests above the package too.

    The production child of a split run does not see them (under bubblewrap), so
    the head's code cannot read the parent's expected outputs at run time.
    """
    side = {checkout / path for path in test_side}
    root = checkout / package.path if package.path else checkout
    only: dict[Path, bool] = {}
    for directory, subdirectories, files in os.walk(root, topdown=False):
        here = Path(directory)
        only[here] = all(here / name in side for name in files) and all(
            only.get(here / name, False) for name in subdirectories
        )
    masked = [path for path in side if path.name == CONFTEST and root not in path.parents]
    pending = [root]
    while pending:
        here = pending.pop()
        if only.get(here) and here != root:
            masked.append(here)
            continue
        for entry in sorted(here.iterdir()) if here.is_dir() and not here.is_symlink() else ():
            if entry.is_dir() and not entry.is_symlink():
                pending.append(entry)
            elif entry in side:
                masked.append(entry)
    return sorted(masked)


def _write(checkout: Path, tree: GitTree, paths: Iterable[str]) -> None:
    for path in paths:
        target = checkout / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(tree.read(path))


def _pytest(
    env: RowEnv,
    package: Package,
    tree: Path,
    files: list[str],
    budget: float,
    split: _Split | None = None,
    select: Sequence[str] | None = None,
) -> Outcomes | None:
    """Outcome per node id of running ``files`` (package-relative) in ``tree``, only the
    ``select`` node ids of them if given; None on time stop.

    With ``split`` (``tree`` as a split run sees it), pytest runs in an
    oracle child and the production code in a production child that serves
    it; without, both in one child. A run pytest itself could not
    finish (an internal or usage error: a conftest that does not import)
    adds the outcome ``failed`` for ``SESSION``.

    Raises:
        RunnerFailure: pytest could not run at all.
    """
    directory = tree / package.path if package.path else tree
    paths = env.import_paths(tree, package)
    chosen: dict[str, object] = {} if select is None else {"select": list(select)}
    try:
        if split is None:
            request: dict[str, object] = {"role": "pytest", "files": files, **chosen}
            answer = env.runner.run(
                request, directory, import_paths=paths, checkout=tree, timeout=budget
            )
        else:
            request = {
                "role": "pytest_split",
                "files": files,
                "test_side": list(split.test_side),
                "handles": True,
                **chosen,
            }
            answer = env.runner.run_served(
                request,
                directory,
                import_paths=paths,
                checkout=tree,
                timeout=budget,
                masked=split.masked,
            )
    except RunnerFailure as failure:
        if str(failure).startswith("timed out"):
            return None
        raise
    outcomes: Outcomes = answer["outcomes"]
    if answer.get("exit") in _UNFINISHED:
        outcomes[SESSION] = "failed"
    return outcomes


def _parents_replay_seconds(parent: GitTree, package: Package) -> float | None:
    """The package's ``replay: {seconds}`` as the parent has it: a patch never sets the
    budget it is judged by."""
    if package.matrix_file != MATRIX_FILE:
        return None  # a Bazel gate: the repository's setting applies
    text = parent.read_optional(package.join(MATRIX_FILE))
    return None if text is None else parse_matrix(text, package.join(MATRIX_FILE)).replay_seconds


def _budget(
    trees_parent: GitTree,
    package: Package,
    options: ReplayOptions,
    baseline: Baseline | None,
    env: RowEnv,
) -> tuple[float, str]:
    """The replay's time budget, with how it was set: the package's ``replay: {seconds}``,
    the repository's ``replay-seconds``, or else five times the parent's baseline plus a
    minute (the runner's floor at least). Property budgets never limit the replay."""
    own = _parents_replay_seconds(trees_parent, package)
    if own is not None:
        where = f"replay: {{seconds}} in {package.join(package.matrix_file)}"
        return max(own, env.runner.timeout_floor), where
    if options.seconds is not None:
        return max(options.seconds, env.runner.timeout_floor), f"{_BUDGET_SETTING}"
    if baseline is None:
        return _BASELINE_SECONDS, f"the default while no baseline is known; set {_BUDGET_SETTING}"
    seconds = _BUDGET_FACTOR * baseline.recorded.seconds + _BUDGET_EXTRA
    derived = (
        f"{_BUDGET_FACTOR}x the parent's baseline plus {_BUDGET_EXTRA:g}s; set {_BUDGET_SETTING}"
    )
    return max(round(seconds), env.runner.timeout_floor), derived


def _failed(outcomes: Outcomes, nodeid: str) -> bool:
    """Anything but a pass: failed, skipped, never reported (its module failed to
    import, say), or stopped at a value that cannot cross."""
    return not _passed(outcomes.get(nodeid, ""))


def _passed(outcome: str) -> bool:
    """A pass, holding production objects or not."""
    return outcome == "passed" or outcome.startswith(PASSED_HOLDING)


def _held(outcome: str) -> set[tuple[str, str]]:
    """Where a passing split-run test received production objects, and what: (test line,
    ``a mod.Bag from mod:make``)."""
    if not outcome.startswith(PASSED_HOLDING):
        return set()
    lines = outcome.removeprefix(PASSED_HOLDING).splitlines()
    return {(where, what) for where, _, what in (line.partition("\t") for line in lines)}


@dataclass(frozen=True)
class _Split:
    """A checkout as a split run sees it: the tests' own files (checkout-relative), and
    the paths its production child does not see."""

    test_side: tuple[str, ...]
    masked: tuple[Path, ...]


@dataclass
class _Package:
    package: Package
    tests: list[str]  # package-relative test files of the parent
    test_side: tuple[str, ...]  # every file the parent's tests stand on, checkout-relative
    budget: float
    freezes: Freezes
    splits: dict[Path, _Split] = field(default_factory=dict)
    baseline: Baseline | None = None
    budget_why: str = ""
    # The parent-passing tests whose footprint the diff does not meet: their parent
    # result stands. None: every test runs again (no baseline, or it cannot be used).
    kept: list[str] | None = None
    again: dict[str, str] = field(default_factory=dict)  # node id -> why it runs again
    notes: list[str] = field(default_factory=list)
    noted: Callable[[str], str] = field(default=lambda path: "")
    shifted: str = ""  # what the shifted environment changes (``Runner.described``)
    hint: str = ""  # the key of its split hint (``runtime/split_hints.py``), set with the baseline

    def split(self, tree: Path) -> _Split:
        """``tree``'s split view, found once: every run on it sees the same files."""
        if tree not in self.splits:
            masked = hidden_from_production(tree, self.package, self.test_side)
            self.splits[tree] = _Split(self.test_side, tuple(masked))
        return self.splits[tree]

    def finding(
        self, verdict: Verdict, nodeid: str, reason: str, lane: Lane = Lane.TEST
    ) -> Finding:
        file = nodeid.split("::", 1)[0]
        return Finding(verdict, lane, self.package.join(file), reason, package=self.package.path)

    def time_stop(self, which: str) -> Finding:
        return self.finding(
            Verdict.REJECT,
            self.tests[0],
            f"replay stopped at the package's time budget ({self.budget:g}s) on the "
            f"{which}: not a pass; the budget is {self.budget_why}, or run check --no-replay",
        )

    @property
    def select(self) -> list[str] | None:
        """The node ids to run again, or None for every test."""
        return None if self.kept is None else sorted(self.again)

    @property
    def run_files(self) -> list[str]:
        """The test files holding what runs again."""
        if self.kept is None:
            return self.tests
        return sorted({nodeid.partition("::")[0] for nodeid in self.again})


class _Stopped(Exception):
    """The replay of a package ended without verdicts on its tests: the finding says why."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.reason)
        self.finding = finding


def _unrunnable(state: _Package, reason: str) -> _Stopped:
    return _Stopped(state.finding(Verdict.REJECT, state.tests[0], reason))


class _SplitTooSlow(Exception):
    """The split run of the parent's code did not finish within the package's budget."""


_TOO_SLOW = "the split run did not finish within the package's time budget on the parent's code"


@dataclass(frozen=True)
class _Runs:
    """Every outcome the verdicts read: the baseline and two head runs, one after the other,
    and the suspects (failed in the first head run) once more on the parent.

    ``inline`` holds the tests judged in one process (the split run could
    not hold them on the parent's code), with why for the first of them.
    """

    baseline: Outcomes
    head: tuple[Outcomes, Outcomes]
    parent_again: Outcomes
    inline: frozenset[str] = frozenset()
    inline_why: str = ""
    # More head runs of the frozen tests that failed both: a freeze excuses a flake only
    frozen_again: tuple[Outcomes, ...] = ()
    # The tests that passed the usual head run and failed the shifted one, in the shifted
    # environment once more: on the head's code, and on the parent's.
    shifted_head: Outcomes = field(default_factory=dict)
    shifted_parent: Outcomes = field(default_factory=dict)


def _judge(state: _Package, runs: _Runs, stats: RuntimeStats) -> list[Finding]:
    passed = {n for n, o in runs.baseline.items() if _passed(o) and "::" in n}
    excused = passed & set(state.freezes.excused)
    findings = _debts(state, runs, sorted(excused), stats)
    deciding = sorted(passed - excused)
    findings += [
        finding
        for nodeid in deciding
        if (finding := _verdict(state, runs, nodeid, stats)) is not None
    ]
    frozen = set(state.freezes.excused)
    broken = sorted(n for n, o in runs.baseline.items() if o == "failed" and n not in frozen)
    if broken:
        findings.append(
            state.finding(
                Verdict.PREEXISTING,
                broken[0],
                f"replay: {len(broken)} parent test(s) already fail on the parent's code "
                f"({_listed(broken)}): preexisting, not blocking",
            )
        )
    if not any(f.verdict is Verdict.REJECT for f in findings):
        note = f"; {len(frozen)} frozen, not deciding" if frozen else ""
        inline = len(runs.inline & set(deciding))
        if inline:
            note += (
                f"; {inline} of them in one process with the code (the split run could not "
                f"hold them: {runs.inline_why})"
            )
        findings.append(
            state.finding(
                Verdict.PASS,
                state.tests[0],
                f"replay: the parent's {len(deciding)} passing test(s) also pass on the head's "
                f"code{_how_run(state, deciding)}{note}{_notes(state)}",
            )
        )
    return findings


def _how_run(state: _Package, deciding: list[str]) -> str:
    """How the passing tests were judged: run twice each, or kept from the parent's run."""
    kept = set(state.kept or ()) & set(deciding)
    again = sorted(set(deciding) - kept)
    why = _listed([f"{n}: {state.again[n]}" for n in again if n in state.again])
    if not kept:
        return f", twice (run again: {why})" if why else ", twice"
    return (
        f": {len(again)} run again twice{f' ({why})' if why else ''}, {len(kept)} kept from "
        "the parent's run (what they ran and read is the parent's)"
    )


def _notes(state: _Package) -> str:
    """The budget's source and the replay's notes. Seconds measured on this machine and
    whether the baseline came from the cache go to the health record, not here: the same
    commits give the same report."""
    budget = f"; budget: {state.budget_why}"
    return budget + "".join(f"; {note}" for note in state.notes)


def _replay_health(state: _Package) -> ReplayHealth:
    """What this package's replay cost, for the health record."""
    baseline = state.baseline
    return ReplayHealth(
        baseline=None if baseline is None else ("cached" if baseline.cached else "recorded"),
        baseline_seconds=None if baseline is None else round(baseline.recorded.seconds, 1),
        budget_seconds=state.budget,
        rerun=None if state.kept is None else len(state.again),
        kept=len(state.kept or ()),
    )


def _debts(state: _Package, runs: _Runs, excused: list[str], stats: RuntimeStats) -> list[Finding]:
    """Frozen tests never decide when they are flaky: one that did not pass every head run
    is reported as debt. One that passed on the parent's code and fails every run on the
    head's (two, then ``_FROZEN_RUNS`` more) is broken, not flaky: a regress."""
    findings = []
    for nodeid in excused:
        head = [*runs.head, *runs.frozen_again]
        if all(not _failed(run, nodeid) for run in runs.head):
            continue
        until = str(state.freezes.excused[nodeid].expires)
        if all(_failed(run, nodeid) for run in head):
            findings.append(
                state.finding(
                    Verdict.REJECT,
                    nodeid,
                    f"replay regress: {nodeid} is frozen ({nodeid}, until {until}) but fails "
                    f"every one of {len(head)} runs on the head's code and passed on the "
                    "parent's: a freeze excuses a flaky test, not one the patch breaks",
                )
            )
            continue
        stats.freeze_hits += 1
        findings.append(
            state.finding(
                Verdict.PREEXISTING,
                nodeid,
                f"replay: {nodeid} is frozen ({nodeid}, until {until}) and did not pass every "
                "run on the head's code: reported as debt",
            )
        )
    return findings


def _verdict(state: _Package, runs: _Runs, nodeid: str, stats: RuntimeStats) -> Finding | None:
    """A parent-passing, deciding test: pass (None), regress or flake."""
    newly_held = _newly_held(runs, nodeid)
    if newly_held:
        return _object_where_plain(state, nodeid, newly_held)
    failed = [_failed(run, nodeid) for run in runs.head]
    if not any(failed):
        return None
    refused = state.freezes.refused.get(nodeid)
    sent = runs.head[0].get(nodeid, "")
    if sent.startswith(UNSENDABLE):
        what = sent.removeprefix(UNSENDABLE)
        where = "from the head's code, where the parent's code gave it plain data"
        return _object_where_plain(state, nodeid, f"{what} {where}")
    if not failed[0] and _failed(runs.shifted_head, nodeid):
        return _how_it_is_run(state, runs, nodeid)
    if all(failed) and _passed(runs.parent_again.get(nodeid, "")):
        why = f" ({refused}, so it decides again)" if refused else ""
        regress = (
            f"replay regress: {nodeid} passes with the parent's code and fails with "
            f"the head's (the parent's test, twice each){why}"
        )
        review = state.noted(state.package.join(nodeid.partition("::")[0]))
        if review:  # a human changed this test's expectation on purpose, and said so
            return state.finding(
                Verdict.HUMAN_NOTED,
                nodeid,
                f"{regress}; the patch's change to that test file has a human note: a "
                f"behaviour change a human explained, {review}",
            )
        return state.finding(Verdict.REJECT, nodeid, regress)
    stats.freeze_misses += 1
    path = state.package.join(FREEZE_FILE)
    remedy = refused or f"freeze it in {path} (nodeid) or fix it"
    return state.finding(
        Verdict.REJECT,
        nodeid,
        "replay: " + flake_reason(nodeid, "2 runs on the same code", nodeid, remedy),
    )


def _how_it_is_run(state: _Package, runs: _Runs, nodeid: str) -> Finding | None:
    """A test that passes on the head's code in the usual environment and fails twice in
    the shifted one: a reject, unless the parent's code fails there too (then the test
    itself depends on the clock or the host, and the patch changed nothing of that)."""
    if _failed(runs.shifted_parent, nodeid):
        state.notes.append(
            f"{nodeid} fails in the shifted environment on the parent's code too: not judged there"
        )
        return None
    outcome = runs.shifted_head.get(nodeid) or "not run"
    return state.finding(
        Verdict.REJECT,
        nodeid,
        f"replay: behaviour depends on how it is run: {nodeid} passes on the head's code in "
        f"the usual environment and gives {outcome!r} twice in the shifted one "
        f"({state.shifted}), where the parent's code passes in both",
    )


def _newly_held(runs: _Runs, nodeid: str) -> str:
    """What a head run handed the test as a production object that the parent's code did not
    give it there (``what (file:line) ..., where the parent's code gave it ...``), or ""."""
    before = _held(runs.baseline.get(nodeid, ""))
    kinds = {(where, _kind(what)) for where, what in before}
    for run in runs.head:
        for where, what in sorted(_held(run.get(nodeid, "")) - before):
            if (where, _kind(what)) in kinds:
                continue  # the same class, moved to another module
            source = _kind(what)[1]
            # what the same call on the same line gave the test on the parent's code
            given = [w for place, w in before if place == where and _kind(w)[1] == source]
            return f"{what} ({where}) from the head's code, where the parent's code gave it " + (
                min(given) if given else "plain data"
            )
    return ""


def _kind(what: str) -> tuple[str, str]:
    """``a mod.core.Bag from mod:make`` as (``Bag``, ``mod:make``): the class by its own
    name, so a class moved to another module (and re-exported) is the same kind."""
    kind, _, source = what.removeprefix("a ").partition(" from ")
    return kind.rpartition(".")[2], source


def _object_where_plain(state: _Package, nodeid: str, what: str) -> Finding:
    return state.finding(
        Verdict.REJECT,
        nodeid,
        f"replay: {nodeid} gets {what}: a production object answers == as it likes, so the "
        "gate cannot judge it; return plain data, or what the parent's code returned",
    )


def _agent_tests(env: RowEnv, trees: ReplayTrees, package: Package, budget: float) -> list[Finding]:
    """The head's new test files, on the head's code: reported, never deciding.

    A changed test file the parent has is the test lane's (statically) and the
    replay's (its parent version); only new ones are the agent's own.
    """
    head_tests, _ = test_files(trees.head, package)
    changed = [path for path in head_tests if trees.parent.blob_id(path) is None]
    if not changed:
        return []
    files = [package.relative(path) for path in changed]
    try:
        outcomes = _pytest(env, package, trees.head_dir, files, budget)
    except RunnerFailure as failure:
        outcomes, note = None, str(failure)
    else:
        note = "time budget stop"
    if outcomes is None:
        summary = f"could not run ({note})"
    else:
        failed = sorted(n for n, o in outcomes.items() if o == "failed")
        passed = sum(1 for o in outcomes.values() if o == "passed")
        summary = f"{passed} passed, {len(failed)} failed" + (
            f" ({_listed(failed)})" if failed else ""
        )
    return [
        Finding(
            Verdict.IGNORED_AS_ORACLE,
            Lane.AGENT_TEST,
            changed[0],
            f"agent tests ({len(changed)} file(s)) on the head's code: {summary}; "
            "reported, never deciding",
            package=package.path,
        )
    ]


def replay_packages(
    packages: list[Package],
    env: RowEnv,
    trees: ReplayTrees,
    stats: RuntimeStats,
    options: ReplayOptions | None = None,
) -> list[Finding]:
    """The trusted replay of every package that has tests in the parent.

    The head checkout becomes the replay tree (the parent's test side over the
    head's code), so this runs after the rows. Both checkouts get their own
    fixtures back first (the rows ran without them). Each package's baseline
    (the parent's tests on the parent's code, with footprints) comes from the
    cache or is recorded first; only the tests whose footprint meets the diff
    run again. Replayed flakes and frozen tests that did not pass count in
    ``stats`` as freeze misses and hits.
    """
    options = options or ReplayOptions()
    findings: list[Finding] = []
    sides = {p.path: (test_files(trees.parent, p), test_files(trees.head, p)) for p in packages}
    for package in packages:
        (_, parent_side), (_, head_side) = sides[package.path]
        _write(trees.parent_dir, trees.parent, parent_side)
        _write(trees.head_dir, trees.head, head_side)
    states = []
    for package in packages:
        (tests, parent_side), _ = sides[package.path]
        state = _Package(
            package=package,
            tests=[package.relative(path) for path in tests],
            test_side=tuple(parent_side),
            budget=0.0,
            freezes=standing_freezes(trees.parent, package, env.today),
            noted=options.noted,
        )
        if tests:
            state.baseline = _baseline(env, trees, state, options)
            if state.baseline is not None and options.reads_file is not None:
                note_reads(options.reads_file, package.path, state.baseline)
            findings += [
                state.finding(Verdict.PASS, state.tests[0], f"replay: {note}")
                for note in options.cache.notes
            ]
            options.cache.notes.clear()
        state.budget, state.budget_why = _budget(
            trees.parent, package, options, state.baseline, env
        )
        findings += _agent_tests(env, trees, package, state.budget)
        if tests:
            states.append(state)
    # a config file the patch adds is the head's test side, gone from the replay tree
    head_config = options.head_config & {p for (_, side), _ in sides.values() for p in side}
    for state in states:
        (_, parent_side), (_, head_side) = sides[state.package.path]
        for path in set(head_side) - set(parent_side):
            (trees.head_dir / path).unlink(missing_ok=True)
        _write(trees.head_dir, trees.parent, set(parent_side) - head_config)
    impact = _impact(
        trees, [sides[state.package.path] for state in states], head_config, options.head_config
    )
    for state in states:
        _plan(state, impact)
        findings += _run_and_judge(env, trees, state, stats, options.hints)
    return findings


def _baseline(
    env: RowEnv, trees: ReplayTrees, state: _Package, options: ReplayOptions
) -> Baseline | None:
    """The package's baseline: from the cache, else recorded on the parent's checkout (and
    kept). None when it cannot be had: then every test runs again, as without one."""
    package = state.package
    roots = [package.path, *env.deps.get(package.path, ())]
    prefix = f"{package.path}/" if package.path else ""
    above = [path for path in state.test_side if not path.startswith(prefix)]
    material = key_material(
        trees.parent, roots, above, env.runner.library, env.runner.bwrap is not None
    )
    # the split's cost follows the tests, not the code: the same machine, the test side
    state.hint = hint_key(
        package.path,
        {**material, "roots": [], "files": files_digest(trees.parent, state.test_side)},
    )
    cache = options.cache
    found = cache.load(trees.parent, material, roots)
    if found is not None:
        return found
    own = _parents_replay_seconds(trees.parent, package)
    given = own if own is not None else options.seconds
    seconds = given if given is not None else _BASELINE_SECONDS
    directory = trees.parent_dir / package.path if package.path else trees.parent_dir
    started = time.monotonic()
    try:
        answer = env.runner.run(
            {"role": "pytest", "files": state.tests, "footprint": True},
            directory,
            import_paths=env.import_paths(trees.parent_dir, package),
            checkout=trees.parent_dir,
            timeout=max(seconds, env.runner.timeout_floor),
        )
    except RunnerFailure as failure:
        state.notes.append(f"no baseline of the parent's code ({failure}): every test runs again")
        return None
    outcomes: Outcomes = answer["outcomes"]
    if answer.get("exit") in _UNFINISHED:
        outcomes[SESSION] = "failed"
    recorded = Recorded(outcomes, answer["footprint"], time.monotonic() - started)
    baseline = Baseline.of(recorded)
    cache.store(trees.parent, material, roots, baseline)
    return baseline


def _impact(
    trees: ReplayTrees,
    sides: list[tuple[tuple[list[str], list[str]], tuple[list[str], list[str]]]],
    head_config: frozenset[str],
    pytest_unmoved: frozenset[str],
) -> Impact:
    """How the replay tree (the head's files, the parent's test side of every replayed
    package over them but the head's config files, the head's own test side gone)
    differs from the parent's checkout; ``pytest_unmoved`` are the config files whose
    pytest sections the classifier found unchanged (``ReplayOptions.head_config``)."""
    parent_side = {path for (_, side), _ in sides for path in side} - head_config
    head_side = {path for _, (_, side) in sides for path in side} - head_config
    parent_files = set(trees.parent.files())
    replay_files = (set(trees.head.files()) - head_side) | parent_side

    def tree_of(path: str) -> GitTree:
        return trees.parent if path in parent_side else trees.head

    links = trees.parent.links() | trees.head.links()
    changes: list[Change] = []
    for path in sorted(parent_files & replay_files):
        if tree_of(path) is trees.parent or trees.parent.blob_id(path) == trees.head.blob_id(path):
            continue
        if path in links:
            changes.append(Change(path, ChangeKind.LINK))
        else:
            change = file_change(path, trees.parent.read(path), trees.head.read(path))
            kept = path in pytest_unmoved
            changes.append(dataclasses.replace(change, pytest_sections_kept=kept))
    parent_entries, replay_entries = entries(parent_files), entries(replay_files)
    for path in sorted(replay_files - parent_files):
        changes.append(
            Change(path, ChangeKind.ADDED, listings=listing_changes(path, parent_entries))
        )
    for path in sorted(parent_files - replay_files):
        changes.append(
            Change(path, ChangeKind.REMOVED, listings=listing_changes(path, replay_entries))
        )
    return Impact(tuple(changes))


def _plan(state: _Package, impact: Impact) -> None:
    """Which tests run again and why; the others keep the parent's result.

    Every test runs again without a baseline, or when a test file or the session
    did not collect on the parent's code (nothing of that run can be kept). A test
    that did not pass on the parent's code runs again, and so does one whose
    footprint meets the diff or could not be recorded.
    """
    baseline = state.baseline
    if baseline is None:
        return
    outcomes = baseline.recorded.outcomes
    if any("::" not in nodeid and outcome == "failed" for nodeid, outcome in outcomes.items()):
        state.notes.append("a test file or conftest did not load on the parent's code")
        return
    for nodeid, outcome in sorted(outcomes.items()):
        if not _passed(outcome):
            state.again[nodeid] = f"it {outcome.partition(':')[0]} on the parent's code"
        else:
            why = impact.reason(baseline.footprint(nodeid))
            if why:
                state.again[nodeid] = why
    state.kept = sorted(n for n, o in outcomes.items() if _passed(o) and n not in state.again)


_Job = tuple[RowEnv, Path, list[str]]


def _both(
    state: _Package,
    jobs: tuple[_Job, _Job],
    split: bool,
    select: Sequence[str] | None = None,
) -> tuple[Outcomes | None, Outcomes | None]:
    """Two pytest runs at once: (environment, tree, files) each, only the ``select`` node
    ids if given (else the state's); an empty file list runs nothing.

    Raises:
        RunnerFailure: pytest could not run at all.
    """
    chosen = state.select if select is None else select
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            pool.submit(
                _pytest,
                env,
                state.package,
                tree,
                files,
                state.budget,
                state.split(tree) if split else None,
                chosen,
            )
            if files
            else None
            for env, tree, files in jobs
        ]
        first, second = (future.result() if future else {} for future in futures)
    return first, second


def _run_and_judge(
    env: RowEnv, trees: ReplayTrees, state: _Package, stats: RuntimeStats, hints: SplitHints
) -> list[Finding]:
    """The parent's tests to run again split from the code (pytest in one child, production
    in another); those the split cannot hold on the parent's code again in one process; the
    others keep the parent's result; then verdicts. Where an earlier check found that the
    split of as many of them cannot fit the budget, they run in one process at once."""
    stats.replays[state.package.path] = _replay_health(state)
    if state.kept is not None and not state.again:
        return _judge(state, _kept_runs(state, _Runs({}, ({}, {}), {})), stats)
    count = None if state.select is None else len(state.select)
    try:
        if hints.too_slow(state.hint, count, state.budget):
            runs = _inline(env, trees, state)
        else:
            try:
                runs = _split_then_inline(env, trees, state)
            except _SplitTooSlow:
                hints.remember(state.hint, count, state.budget)
                runs = _inline(env, trees, state)
    except _Stopped as stopped:
        return [stopped.finding]
    try:
        runs = _frozen_again(env, trees, state, _kept_runs(state, runs))
    except _Stopped as stopped:
        return [stopped.finding]
    return _judge(state, runs, stats)


def _inline(env: RowEnv, trees: ReplayTrees, state: _Package) -> _Runs:
    """Every test to run again in one process with the code: the split cannot hold them
    within the budget (every call crosses two pipes, and a suite of many small calls
    makes hundreds of thousands).

    Raises:
        _Stopped: a run could not run, or hit the time budget.
    """
    runs = _runs(env, trees, state, state.run_files, split=False)
    ran = frozenset(n for n in runs.baseline if "::" in n)
    return dataclasses.replace(runs, inline=ran, inline_why=_TOO_SLOW)


def _frozen_again(env: RowEnv, trees: ReplayTrees, state: _Package, runs: _Runs) -> _Runs:
    """The frozen tests that passed on the parent and failed both head runs, run
    ``_FROZEN_RUNS`` times more on the head's code (in the process mode they ran in).

    Raises:
        _Stopped: a run could not run, or hit the time budget.
    """
    suspects = sorted(
        n
        for n in state.freezes.excused
        if _passed(runs.baseline.get(n, "")) and all(_failed(run, n) for run in runs.head)
    )
    if not suspects:
        return runs
    again: list[Outcomes] = []
    for _ in range(_FROZEN_RUNS):
        outcomes: Outcomes = {}
        for split in (True, False):
            chosen = [n for n in suspects if (n in runs.inline) != split]
            if not chosen:
                continue
            try:
                found = _pytest(
                    env,
                    state.package,
                    trees.head_dir,
                    chosen,
                    state.budget,
                    state.split(trees.head_dir) if split else None,
                    chosen,
                )
            except RunnerFailure as failure:
                raise _unrunnable(state, f"replay rerun failed: {failure}") from None
            if found is None:
                raise _Stopped(state.time_stop("head's code"))
            outcomes.update(found)
        again.append(outcomes)
    return dataclasses.replace(runs, frozen_again=tuple(again))


def _kept_runs(state: _Package, runs: _Runs) -> _Runs:
    """``runs`` with the kept tests' parent result in the baseline and in both head runs:
    their code and the files they read are the parent's, so the head's result is too."""
    if not state.kept or state.baseline is None:
        return runs
    parent = state.baseline.recorded.outcomes
    kept = {nodeid: parent[nodeid] for nodeid in state.kept}
    return dataclasses.replace(
        runs,
        baseline={**runs.baseline, **kept},
        head=({**runs.head[0], **kept}, {**runs.head[1], **kept}),
    )


def _split_then_inline(env: RowEnv, trees: ReplayTrees, state: _Package) -> _Runs:
    """Every test split; what the split could not hold on the parent's code, in one process.

    Raises:
        _SplitTooSlow: the split baseline did not finish within the budget.
        _Stopped: a run could not run, or hit the budget.
    """
    split = _runs(env, trees, state, state.run_files, split=True)
    units = _one_process_units(state, split.baseline)
    if not units:
        return split
    return _merged(split, _runs(env, trees, state, units, split=False), units)


def _runs(env: RowEnv, trees: ReplayTrees, state: _Package, files: list[str], split: bool) -> _Runs:
    """Baseline (parent's code) and replay (head's code) at once; then the head again, with
    the suspects on the parent again.

    The head's second run starts after its first ended, so a test whose outcome
    alternates between runs (state kept outside the process) is seen as a flake
    even when its first run passed.

    Raises:
        _SplitTooSlow: the split baseline does not fit the budget, even alone.
        _Stopped: pytest could not run, or a run hit the time budget.
    """
    try:
        baseline, replay = _both(
            state, ((env, trees.parent_dir, files), (env, trees.head_dir, files)), split
        )
    except RunnerFailure as failure:
        raise _unrunnable(state, f"replay could not run: {failure}") from None
    if baseline is None and split:
        baseline = _parent_alone(env, trees, state, files)
    if baseline is None or replay is None:
        raise _Stopped(state.time_stop("parent's code" if baseline is None else "head's code"))
    excused = set(state.freezes.excused)
    suspects = sorted(
        n
        for n, o in baseline.items()
        if _passed(o) and "::" in n and n not in excused and _failed(replay, n)
    )
    shifted = env.shifted()
    try:
        again_head, again_parent = _both(
            state, ((shifted, trees.head_dir, files), (env, trees.parent_dir, suspects)), split
        )
    except RunnerFailure as failure:
        raise _unrunnable(state, f"replay rerun failed: {failure}") from None
    if again_head is None or again_parent is None:
        raise _Stopped(state.time_stop("head's code" if again_head is None else "parent's code"))
    runs = _Runs(baseline, (replay, again_head), again_parent)
    return _shifted_again(shifted, trees, state, runs, split)


def _shifted_again(
    shifted: RowEnv, trees: ReplayTrees, state: _Package, runs: _Runs, split: bool
) -> _Runs:
    """The tests that passed the usual head run and failed the shifted one, in the shifted
    environment again on both sides: twice on the head's code is not a flake, and the
    parent's code says whether the patch made the difference.

    Raises:
        _Stopped: pytest could not run, or a run hit the time budget.
    """
    excused = set(state.freezes.excused)
    first, second = runs.head
    moved = sorted(
        n
        for n, o in runs.baseline.items()
        if _passed(o)
        and "::" in n
        and n not in excused
        and _passed(first.get(n, ""))
        and _failed(second, n)
    )
    if not moved:
        return runs
    state.shifted = shifted.runner.described()
    try:
        head, parent = _both(
            state,
            ((shifted, trees.head_dir, moved), (shifted, trees.parent_dir, moved)),
            split,
            select=moved,
        )
    except RunnerFailure as failure:
        raise _unrunnable(state, f"replay rerun failed: {failure}") from None
    if head is None or parent is None:
        raise _Stopped(state.time_stop("head's code" if head is None else "parent's code"))
    return dataclasses.replace(runs, shifted_head=head, shifted_parent=parent)


def _parent_alone(
    env: RowEnv, trees: ReplayTrees, state: _Package, files: list[str]
) -> Outcomes | None:
    """The split baseline once more, with no head code running beside it to slow it down
    (a head that burns the CPU must not push the parent's run out of the split).

    Raises:
        _SplitTooSlow: it does not fit the budget alone either.
        _Stopped: pytest could not run.
    """
    try:
        baseline = _pytest(
            env,
            state.package,
            trees.parent_dir,
            files,
            state.budget,
            state.split(trees.parent_dir),
            state.select,
        )
    except RunnerFailure as failure:
        raise _unrunnable(state, f"replay could not run: {failure}") from None
    if baseline is None:
        raise _SplitTooSlow
    return baseline


def _one_process_units(state: _Package, baseline: Outcomes) -> list[str]:
    """What the split run could not hold on the parent's code: tests that did not pass
    (a failure there may be the split's: a value that cannot cross), and whole files
    that did not collect; every file when pytest could not finish."""
    units = set()
    for nodeid, outcome in baseline.items():
        if _passed(outcome) or outcome == "skipped":
            continue
        if "::" in nodeid or nodeid in state.tests:
            units.add(nodeid)
        else:  # a conftest, or the session: nothing of the split run can be kept
            return list(state.run_files)
    return sorted(units)


def _merged(split: _Runs, inline: _Runs, units: list[str]) -> _Runs:
    """The split run's outcomes, with the one-process run's for what it ran instead."""
    instead = set(units)

    def covered(nodeid: str) -> bool:
        return nodeid in instead or nodeid.partition("::")[0] in instead or nodeid == SESSION

    def merge(kept: Outcomes, other: Outcomes) -> Outcomes:
        return {**{n: o for n, o in kept.items() if not covered(n)}, **other}

    sent = (o for n, o in sorted(split.baseline.items()) if covered(n) and o.startswith(UNSENDABLE))
    why = next(sent, "they fail there and pass in one process")
    return _Runs(
        merge(split.baseline, inline.baseline),
        (merge(split.head[0], inline.head[0]), merge(split.head[1], inline.head[1])),
        merge(split.parent_again, inline.parent_again),
        frozenset(n for n in inline.baseline if "::" in n),
        why.removeprefix(UNSENDABLE),
        shifted_head=merge(split.shifted_head, inline.shifted_head),
        shifted_parent=merge(split.shifted_parent, inline.shifted_parent),
    )
