"""Trusted replay: the parent's tests against the head's production code.

For each selected package, the parent's test files, test-support files,
fixtures and harness (``conftest.py`` and pytest configuration, in the package
and in the directories above it) are written over a checkout of the head, and
pytest runs them there in a child (``sandbox.Runner``). The same tests on the
parent's checkout give the baseline:

- passes on parent, fails on head (twice each): ``regress``, naming the node id;
- fails on parent: ``preexisting``;
- differs between two runs on the same code: a flake, keyed by node id; frozen
  in the parent's ``flake_freeze.yaml`` it is debt, else a reject;
- frozen tests run but never decide;
- a run that hits the package's time budget is a reject, never a pass.

The head's own new test files run too, on the head's code, and are
reported as agent tests (they never decide).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from oracle_gate.config.ledgers import FREEZE_FILE, parse_freeze
from oracle_gate.errors import GateError
from oracle_gate.globs import matches_any
from oracle_gate.model import Finding, Lane, Package, Verdict
from oracle_gate.repo.trees import GitTree
from oracle_gate.runtime.judge import RowEnv
from oracle_gate.runtime.sandbox import RunnerFailure

__all__ = ["ReplayTrees", "replay_packages"]

# pytest configuration and plugins that apply to a package's tests from where they sit.
_HARNESS_NAMES = frozenset({"conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"})
Outcomes = dict[str, str]
_SHOWN = 3


@dataclass(frozen=True)
class ReplayTrees:
    """Both commits as git objects and as checkouts (the rows' checkouts, reused)."""

    parent: GitTree
    head: GitTree
    parent_dir: Path
    head_dir: Path


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
    fixtures = [*matrix.fixtures, *(g for row in matrix.rows for g in row.fixtures)]
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
            or matches_any(relative, fixtures)
            or posixpath.basename(relative) in _HARNESS_NAMES
        ):
            stands_on.append(path)
    return tests, stands_on


def _write(checkout: Path, tree: GitTree, paths: Iterable[str]) -> None:
    for path in paths:
        target = checkout / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(tree.read(path))


def _frozen(tree: GitTree, package: Package) -> set[str]:
    path = package.join(FREEZE_FILE)
    text = tree.read_optional(path)
    if not text:
        return set()
    try:
        return {e.nodeid for e in parse_freeze(text, path).entries if e.nodeid}
    except GateError:
        return set()  # the ledger lane reports it


def _pytest(
    env: RowEnv, package: Package, tree: Path, files: list[str], budget: float
) -> Outcomes | None:
    """Outcome per node id of running ``files`` (package-relative) in ``tree``; None on time stop.

    Raises:
        RunnerFailure: pytest could not run at all.
    """
    directory = tree / package.path if package.path else tree
    try:
        answer = env.runner.run(
            {"role": "pytest", "files": files},
            directory,
            import_paths=env.import_paths(tree, package),
            checkout=tree,
            timeout=budget,
        )
    except RunnerFailure as failure:
        if str(failure).startswith("timed out"):
            return None
        raise
    outcomes: Outcomes = answer["outcomes"]
    return outcomes


def _budget(package: Package, env: RowEnv) -> float:
    """The package's time budget: its rows' seconds together (the runner's floor at least)."""
    seconds = sum(row.budget.seconds for row in package.matrix.rows)
    return max(seconds, env.runner.timeout_floor)


def _failed(outcomes: Outcomes, nodeid: str) -> bool:
    """Failed, or never reported (its module failed to import, say)."""
    return outcomes.get(nodeid, "failed") == "failed"


@dataclass
class _Package:
    package: Package
    tests: list[str]  # package-relative test files of the parent
    budget: float
    frozen: set[str]
    baseline: Outcomes | None = None
    replay: Outcomes | None = None

    def finding(
        self, verdict: Verdict, nodeid: str, reason: str, lane: Lane = Lane.TEST
    ) -> Finding:
        file = nodeid.split("::", 1)[0]
        return Finding(verdict, lane, self.package.join(file), reason, package=self.package.path)


def _judge(env: RowEnv, trees: ReplayTrees, state: _Package) -> list[Finding]:
    first = state.tests[0]
    if state.baseline is None or state.replay is None:
        which = "parent's code" if state.baseline is None else "head's code"
        return [
            state.finding(
                Verdict.REJECT,
                first,
                f"replay stopped at the package's time budget ({state.budget:g}s) on the "
                f"{which}: not a pass; raise the rows' budget or run check --no-replay",
            )
        ]
    passed = {n for n, o in state.baseline.items() if o == "passed" and "::" in n}
    suspects = sorted(n for n in passed - state.frozen if _failed(state.replay, n))
    findings: list[Finding] = []
    if suspects:
        findings += _confirm(env, trees, state, suspects)
    broken = sorted(n for n, o in state.baseline.items() if o == "failed" and n not in state.frozen)
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
        frozen = f"; {len(state.frozen)} frozen, not deciding" if state.frozen else ""
        findings.append(
            state.finding(
                Verdict.PASS,
                first,
                f"replay: the parent's {len(passed)} passing test(s) also pass on the head's "
                f"code{frozen}",
            )
        )
    return findings


def _confirm(
    env: RowEnv, trees: ReplayTrees, state: _Package, suspects: list[str]
) -> list[Finding]:
    """Run the suspects again on both trees: a regress must repeat, else it is a flake."""
    package = state.package
    with ThreadPoolExecutor(max_workers=2) as pool:
        parent = pool.submit(_pytest, env, package, trees.parent_dir, suspects, state.budget)
        head = pool.submit(_pytest, env, package, trees.head_dir, suspects, state.budget)
        try:
            again_parent, again_head = parent.result(), head.result()
        except RunnerFailure as failure:
            return [state.finding(Verdict.REJECT, suspects[0], f"replay rerun failed: {failure}")]
    findings = []
    for nodeid in suspects:
        if again_parent is None or again_head is None:
            findings.append(
                state.finding(
                    Verdict.REJECT,
                    nodeid,
                    f"replay: {nodeid} fails on the head's code; its rerun hit the time budget",
                )
            )
        elif again_parent.get(nodeid) == "passed" and _failed(again_head, nodeid):
            findings.append(
                state.finding(
                    Verdict.REJECT,
                    nodeid,
                    f"replay regress: {nodeid} passes with the parent's code and fails with "
                    "the head's (the parent's test, twice each)",
                )
            )
        else:
            findings.append(
                state.finding(
                    Verdict.REJECT,
                    nodeid,
                    f"replay: {nodeid} gives different outcomes on the same code: flake; "
                    f"freeze it in {package.join(FREEZE_FILE)} (nodeid) or fix it",
                )
            )
    return findings


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


def replay_packages(packages: list[Package], env: RowEnv, trees: ReplayTrees) -> list[Finding]:
    """The trusted replay of every package that has tests in the parent.

    The head checkout becomes the replay tree (the parent's test side over the
    head's code), so this runs after the rows. Both checkouts get their own
    fixtures back first (the rows ran without them).
    """
    findings: list[Finding] = []
    sides = {p.path: (test_files(trees.parent, p), test_files(trees.head, p)) for p in packages}
    for package in packages:
        (_, parent_side), (_, head_side) = sides[package.path]
        _write(trees.parent_dir, trees.parent, parent_side)
        _write(trees.head_dir, trees.head, head_side)
    for package in packages:
        findings += _agent_tests(env, trees, package, _budget(package, env))
    states = []
    for package in packages:
        (tests, parent_side), (_, head_side) = sides[package.path]
        if not tests:
            continue
        for path in set(head_side) - set(parent_side):
            (trees.head_dir / path).unlink(missing_ok=True)
        _write(trees.head_dir, trees.parent, parent_side)
        states.append(
            _Package(
                package=package,
                tests=[package.relative(path) for path in tests],
                budget=_budget(package, env),
                frozen=_frozen(trees.parent, package),
            )
        )
    for state in states:
        findings += _run_and_judge(env, trees, state)
    return findings


def _run_and_judge(env: RowEnv, trees: ReplayTrees, state: _Package) -> list[Finding]:
    """Baseline (parent's code) and replay (head's code) at once, then the verdicts."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = [
            pool.submit(_pytest, env, state.package, tree, state.tests, state.budget)
            for tree in (trees.parent_dir, trees.head_dir)
        ]
        try:
            state.baseline, state.replay = runs[0].result(), runs[1].result()
        except RunnerFailure as failure:
            reason = f"replay could not run: {failure}"
            return [state.finding(Verdict.REJECT, state.tests[0], reason)]
    return _judge(env, trees, state)
