"""``oracle-gate explain PATH``: the lane, package and rows of one path, why, and what to do.

The lane comes from the gate's own classifier and the verdict from its own path
judges (``check(run_rows=False)``), so explain can never disagree with check
about a path; only the wording of the rule and of the remedy lives here.
"""

from __future__ import annotations

import argparse
import dataclasses
import posixpath
from pathlib import Path

from oracle_gate.classify import classify
from oracle_gate.cli.common import repo_root, today
from oracle_gate.config.ledgers import FREEZE_FILE, SEEDS_FILE
from oracle_gate.config.settings import SETTINGS_FILE
from oracle_gate.facts import Facts, LanedPath, gather_facts, rows_guarding
from oracle_gate.gate import check
from oracle_gate.model import ORACLE_LANES, Change, ChangeKind, Finding, Lane, Verdict

__all__ = ["LANE_RULES", "add_explain_arguments", "cmd_explain"]

# What puts a path in each lane (docs/classification.md has every rule in order).
LANE_RULES: dict[Lane, str] = {
    Lane.PRODUCTION: "code the patch may change if a row guards it: a file inside a package "
    "that no oracle rule claims, or a non-documentation file outside every package that the "
    "root settings do not list in 'outside'",
    Lane.TEST: "matches the package's 'tests' globs, or is test support (a file under a test "
    "folder, conftest.py), and exists in the parent: it is locked",
    Lane.AGENT_TEST: "matches the package's 'tests' globs or is test support, and is new in "
    "this patch without patching anything at import: it judges nothing",
    Lane.FIXTURE: "matches the package's 'fixtures' globs or a row's 'fixtures'",
    Lane.LOCK: "is an oracle_gate.lock",
    Lane.LEDGER: "is a seeds.jsonl, flake_freeze.yaml, assumptions.yaml or ORACLE_CHANGELOG.md",
    Lane.MATRIX: "is an invariants.yaml, or a BUILD file that declares an oracle_gate() gate",
    Lane.PROPERTY: "is a module a row names in 'properties', 'partitions' or 'relations'",
    Lane.HARNESS: "changes how tests are collected, run or judged (conftest.py, pytest.ini, "
    "pytest's sections of pyproject.toml, setup.cfg and tox.ini, pytest11 entry points, "
    ".bazelrc files and what they import, BUILD/.bzl files, the CI job that runs oracle-gate "
    "and what it reads, CODEOWNERS, a module binding pytest_* names, a new test module that "
    "patches at import, compiled code on the tests' side)",
    Lane.DOCS: "is documentation: the 'docs' globs of the root settings (never a file Python "
    "can import)",
    Lane.OTHER: "never runs and never judges (repository metadata such as .gitignore, packaging "
    "and linter settings, CI that does not run oracle-gate, dependency lists the gate does not "
    "install, or a path the root settings list in 'outside' or 'tooling')",
}


def add_explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="a repository-relative path")
    parser.add_argument(
        "--base",
        default="HEAD",
        help="judge the path as changed from this commit to --head (default: HEAD, "
        "so only where it would land)",
    )
    parser.add_argument("--head", default="HEAD", help="the patched commit (default: HEAD)")
    parser.add_argument("--today", help="judge freeze expiry as of this YYYY-MM-DD date")


def _laned(facts: Facts, path: str) -> tuple[LanedPath, bool]:
    """The path's LanedPath, and whether the patch changes it.

    An unchanged path is classified as if the patch modified it (added when the
    head tree lacks it), through the same classifier check uses.
    """
    for laned in classify(facts):
        if laned.path == path:
            return laned, True
    kind = ChangeKind.MODIFIED if facts.head.blob_id(path) is not None else ChangeKind.ADDED
    diff = dataclasses.replace(facts.diff, changes=(Change(path=path, kind=kind),))
    (laned,) = classify(dataclasses.replace(facts, diff=diff))
    return laned, False


def _note_command(laned: LanedPath) -> str:
    """The command a human runs, from the repository root, to note the path's change."""
    return f'oracle-gate note {laned.path} --reason "<why>"'


def _remedy(
    laned: LanedPath, verdict: Verdict | None, parent: str, rows: tuple[str, ...]
) -> tuple[str, str]:
    """What a human would need to do, and the command that does it."""
    package = laned.package
    where = package.path or "." if package else "."
    name = posixpath.basename(laned.path)
    if verdict in (Verdict.PASS, Verdict.IGNORED_AS_ORACLE, Verdict.PREEXISTING):
        return "nothing: the path does not block the merge", ""
    if laned.lane is Lane.PRODUCTION:
        if package is None:
            return (
                f"allow it outside every package: add a glob for it to 'outside' in "
                f"{SETTINGS_FILE} (a reviewed change), or move it into a package",
                f"oracle-gate init --root   # if {SETTINGS_FILE} does not exist yet",
            )
        if rows:
            return (
                "no note: the rows that guard it run in check, and a change merges if they hold",
                f"oracle-gate check --base {parent[:12]}",
            )
        return (
            f"make a row guard it: a row of {package.join('invariants.yaml')} whose 'globs' "
            "match it, committed with a human note, then relock",
            f"oracle-gate lock --write {where}",
        )
    if laned.lane is Lane.LOCK:
        return (
            "an owner reviews the oracle change the lock records, relocks and notes it",
            f"oracle-gate lock --write {where} && {_note_command(laned)}",
        )
    if laned.lane is Lane.LEDGER and name == FREEZE_FILE:
        return (
            "only a human freezes, extends or thaws, with a note for edits and removals",
            f"oracle-gate freeze add|extend|remove NODEID ... && {_note_command(laned)}",
        )
    if laned.lane is Lane.LEDGER and name == SEEDS_FILE:
        return (
            "seeds are append-only; a human retires one instead of deleting it",
            f"oracle-gate seeds list {where} && oracle-gate seeds retire FILE:LINE --by <you>",
        )
    if verdict is Verdict.HUMAN_NOTED:
        return "an owner reviews the noted change before it merges", ""
    if laned.lane in ORACLE_LANES:
        return (
            "an owner reviews the change to the oracle and records why in a human note",
            _note_command(laned),
        )
    return "nothing: the path does not block the merge", ""


def _judged(repo: Path, facts: Facts, path: str) -> tuple[Verdict, list[Finding]]:
    """The path's verdict and findings from check's own path judges (rows are not run)."""
    report = check(repo, base=facts.diff.base, head=facts.diff.head, today=facts.today,
                   run_rows=False)  # fmt: skip
    return report.verdict_of(path), [f for f in report.findings if f.path == path]


def cmd_explain(args: argparse.Namespace) -> int:
    repo = repo_root(args.repo)
    path = posixpath.normpath(args.path.strip("/"))
    facts = gather_facts(repo, args.base, args.head, today(args.today))
    laned, changed = _laned(facts, path)
    package = laned.package
    print(f"path:    {path}")
    print(f"package: {package.path or '.' if package else '(none: outside every package)'}")
    rows = rows_guarding(laned, facts)
    print(f"rows:    {', '.join(rows) if rows else '(no row guards it)'}")
    print(f"lane:    {laned.lane.value}: {LANE_RULES[laned.lane]}")
    verdict: Verdict | None = None
    findings: list[Finding] = []
    if facts.diff.changes:
        verdict, findings = _judged(repo, facts, path)
    since = f"since {facts.diff.base[:12]}"
    if changed or findings:
        what = laned.change.kind.value if changed else "unchanged, but judged"
        print(f"verdict: {verdict and verdict.value} ({what} {since}; rows not run)")
        for finding in findings:
            print(f"  {finding.verdict.value}: {finding.reason}")
    else:
        verdict = None
        print(f"verdict: (unchanged {since}; what a change would need:)")
    todo, command = _remedy(laned, verdict, facts.diff.base, rows)
    print(f"todo:    {todo}")
    if command:
        print(f"command: {command}")
    return 0
