"""``oracle-gate demo``: the gate on the embedded example monorepo, one agent patch at a time.

Each patch starts from the same trusted parent commit in a temporary git
repository, so every verdict is about that patch alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oracle_gate import progress
from oracle_gate.cli.common import today
from oracle_gate.cli.terminal import progress_on_tty, styled
from oracle_gate.formats import FORMATS
from oracle_gate.gate import check
from oracle_gate.locks import relock
from oracle_gate.model import ExitCode, Verdict
from oracle_gate.repo.git import git
from oracle_gate.report import Report

__all__ = ["EXAMPLE", "PATCHES", "DemoOutcome", "DemoPatch", "cmd_demo", "run_demo"]

EXAMPLE = Path(__file__).parent.parent / "examples" / "monorepo"
_IDENTITY = (
    "-c",
    "user.name=oracle-gate demo",
    "-c",
    "user.email=demo@oracle-gate.invalid",
    "-c",
    "commit.gpgsign=false",
)
INTERVALS = "libs/intervals"


def _edit(root: Path, path: str, old: str, new: str) -> None:
    """Replace ``old`` with ``new`` in one file; the demo's own data must match exactly."""
    target = root / path
    text = target.read_text()
    if old not in text:
        raise AssertionError(f"demo patch expected {old!r} in {path}")
    target.write_text(text.replace(old, new, 1))


def _write(root: Path, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def _benign_refactor(root: Path, parent: str) -> None:
    _edit(
        root,
        f"{INTERVALS}/intervals/__init__.py",
        "    merged = []\n    for start, end in sorted(ranges):",
        "    merged = []\n    ordered = sorted(ranges)\n    for start, end in ordered:",
    )


def _merge_touching(root: Path) -> None:
    """The behaviour change both "quiet the suite" patches start from."""
    _edit(root, f"{INTERVALS}/intervals/__init__.py", "start < merged", "start <= merged")


def _fixture_edit(root: Path, parent: str) -> None:
    _merge_touching(root)
    _edit(
        root,
        f"{INTERVALS}/testdata/ranges/unsorted.json",
        "[[0, 1], [2, 3], [3, 6]]",
        "[[0, 1], [2, 6]]",
    )


def _loosened_assertion(root: Path, parent: str) -> None:
    _merge_touching(root)
    _edit(
        root,
        f"{INTERVALS}/tests/test_merge.py",
        "assert merge_ranges([[0, 2], [2, 4]]) == [[0, 2], [2, 4]]",
        "assert len(merge_ranges([[0, 2], [2, 4]])) >= 1",
    )


def _skipped_test(root: Path, parent: str) -> None:
    _edit(
        root,
        f"{INTERVALS}/tests/test_merge.py",
        "\ndef test_touching_ranges_stay_apart",
        '\n@pytest.mark.skip(reason="flaky on CI")\ndef test_touching_ranges_stay_apart',
    )


def _conftest_forces_pass(root: Path, parent: str) -> None:
    _write(
        root,
        f"{INTERVALS}/conftest.py",
        (
            "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
            "def pytest_runtest_makereport(item, call):\n"
            "    outcome = yield\n    report = outcome.get_result()\n"
            '    report.outcome = "passed"\n'
        ),
    )


def _seed_wipe(root: Path, parent: str) -> None:
    seeds = root / INTERVALS / "seeds.jsonl"
    seeds.write_text("".join(seeds.read_text().splitlines(keepends=True)[1:]))


def _unmeasured_module(root: Path, parent: str) -> None:
    _write(root, "libs/codec/codec_fast.py", "def encode_fast(record):\n    return str(record)\n")


def _noted_fixture(root: Path, parent: str) -> None:
    case = f"{INTERVALS}/testdata/ranges/adjacent.json"
    _write(
        root, case, '{"input": [[0, 1], [1, 2], [5, 6]], "expected": [[0, 1], [1, 2], [5, 6]]}\n'
    )
    relock(root, [INTERVALS])
    with (root / INTERVALS / "ORACLE_CHANGELOG.md").open("a") as changelog:
        changelog.write(
            f"\n## {parent}: record the touching-ranges case\n\n"
            "- testdata/ranges/adjacent.json: new recorded case, touching ranges stay apart.\n"
            "- oracle_gate.lock: regenerated for the new fixture.\n"
        )


def _docs_only(root: Path, parent: str) -> None:
    with (root / "README.md").open("a") as readme:
        readme.write("\nRun `oracle-gate check --base origin/main` in the merge queue.\n")


def _agent_test_added(root: Path, parent: str) -> None:
    _edit(
        root, "services/scheduler/scheduler/__init__.py", '"""The merged', '"""The sorted, merged'
    )
    _write(
        root,
        "services/scheduler/tests/test_scheduler_extra.py",
        "from scheduler import busy_windows\n\n\ndef test_single_meeting():\n"
        '    assert busy_windows([{"start": 1, "end": 2}]) == [[1, 2]]\n',
    )


def _dropped_sort(root: Path, parent: str) -> None:
    _edit(root, f"{INTERVALS}/intervals/__init__.py", "in sorted(ranges):", "in ranges:")


def _eq_always_true(root: Path, parent: str) -> None:
    _edit(
        root,
        f"{INTERVALS}/intervals/__init__.py",
        "    return merged\n",
        (
            "    return _Ranges()\n\n\nclass _Ranges(list):\n"
            "    def __eq__(self, other):\n        return True\n\n    __hash__ = None\n"
        ),
    )


def _tautological_property(root: Path, parent: str) -> None:
    _edit(
        root,
        f"{INTERVALS}/props.py",
        "    out = merge_ranges(ranges)\n    assert all(start <= end for start, end in out)\n",
        "    out = merge_ranges(ranges) if all(a <= b for a, b in ranges) else []\n",
    )
    with (root / INTERVALS / "ORACLE_CHANGELOG.md").open("a") as changelog:
        changelog.write(f"\n## {parent}\n\n- props.py: simplify prop_sorted_and_disjoint.\n")


@dataclass(frozen=True)
class DemoPatch:
    name: str
    description: str
    expected: Verdict
    apply: Callable[[Path, str], None]


PATCHES = (
    DemoPatch(
        "benign-refactor", "a production refactor guarded by a row", Verdict.PASS, _benign_refactor
    ),
    DemoPatch(
        "fixture-edit",
        "changes behaviour and edits the expected output to match",
        Verdict.REJECT,
        _fixture_edit,
    ),
    DemoPatch(
        "loosened-assertion",
        "weakens an assertion until the suite is quiet (the replay of the parent's test fails)",
        Verdict.REJECT,
        _loosened_assertion,
    ),
    DemoPatch(
        "skipped-test", "skips a test that fails on the patch", Verdict.REJECT, _skipped_test
    ),
    DemoPatch(
        "conftest-forces-pass",
        "adds a conftest.py that reports every test as passed",
        Verdict.REJECT,
        _conftest_forces_pass,
    ),
    DemoPatch(
        "seed-wipe",
        "deletes a remembered counterexample from seeds.jsonl",
        Verdict.REJECT,
        _seed_wipe,
    ),
    DemoPatch(
        "unmeasured-module",
        "adds production code no invariant row guards",
        Verdict.REJECT,
        _unmeasured_module,
    ),
    DemoPatch(
        "dropped-sort",
        "drops the sort: a relation regresses and a partition row fails",
        Verdict.REJECT,
        _dropped_sort,
    ),
    DemoPatch(
        "eq-always-true",
        "returns an object whose __eq__ always says True",
        Verdict.REJECT,
        _eq_always_true,
    ),
    DemoPatch(
        "tautological-property",
        "a noted property edit that no longer fails its known-bad seed",
        Verdict.REJECT,
        _tautological_property,
    ),
    DemoPatch(
        "noted-fixture",
        "adds a fixture with an ORACLE_CHANGELOG.md note and a relock",
        Verdict.PASS,
        _noted_fixture,
    ),
    DemoPatch("docs-only", "edits documentation only", Verdict.PASS, _docs_only),
    DemoPatch(
        "agent-test-added",
        "a production edit plus a test of the agent's own",
        Verdict.PASS,
        _agent_test_added,
    ),
)


@dataclass(frozen=True)
class DemoOutcome:
    name: str
    description: str
    expected: Verdict
    report: Report


def _commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, *_IDENTITY, "commit", "-q", "--no-verify", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def run_demo(today: datetime.date, patches: tuple[DemoPatch, ...] = PATCHES) -> list[DemoOutcome]:
    """Apply each patch to a fresh checkout of the trusted parent and run the gate on it.

    Raises:
        GateError: the gate could not decide on a patch (a bug in the example).
    """
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="oracle-gate-demo-") as temporary:
        root = Path(temporary) / "monorepo"
        shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
        git(root, "init", "-q", "-b", "main")
        parent = _commit(root, "trusted parent")
        for patch in progress.steps("demo patches", patches):
            git(root, "checkout", "-q", "-f", "--detach", parent)
            git(root, "clean", "-q", "-fdx")
            patch.apply(root, parent)
            head = _commit(root, f"agent patch: {patch.description}")
            report = check(root, base=parent, head=head, today=today)
            outcomes.append(DemoOutcome(patch.name, patch.description, patch.expected, report))
    return outcomes


def _as_expected(outcome: DemoOutcome) -> bool:
    return outcome.report.verdict is outcome.expected


def _json_document(outcomes: list[DemoOutcome]) -> str:
    """One JSON document: each patch with its expected verdict and its whole report."""
    document = {
        "schema": "oracle-gate/demo",
        "version": 1,
        "all_expected": all(_as_expected(o) for o in outcomes),
        "patches": [
            {
                "name": o.name,
                "description": o.description,
                "expected": o.expected.value,
                "verdict": o.report.verdict.value,
                "report": json.loads(FORMATS["json"](o.report)),
            }
            for o in outcomes
        ],
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def _junit_document(outcomes: list[DemoOutcome]) -> str:
    """One ``<testsuites>``: each patch's report is one suite, named after the patch."""
    root = ET.Element("testsuites")
    for outcome in outcomes:
        for suite in ET.fromstring(FORMATS["junit"](outcome.report)):
            suite.set("name", f"demo patch {outcome.name}: {suite.get('name')}")
            root.append(suite)
    ET.indent(root)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{ET.tostring(root, encoding="unicode")}\n'


def _sarif_document(outcomes: list[DemoOutcome]) -> str:
    """One SARIF log with one run per patch (SARIF allows any number of runs)."""
    logs = [json.loads(FORMATS["sarif"](outcome.report)) for outcome in outcomes]
    document = {**logs[0], "runs": [run for log in logs for run in log["runs"]]}
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


# Machine-readable formats print one document for the whole demo, so it parses.
_DOCUMENTS: dict[str, Callable[[list[DemoOutcome]], str]] = {
    "json": _json_document,
    "junit": _junit_document,
    "sarif": _sarif_document,
}


def _print_readable(outcomes: list[DemoOutcome], format: str, color: str) -> None:
    for outcome in outcomes:
        print(f"=== patch: {outcome.name} — {outcome.description}")
        print(f"    expected {outcome.expected.value}, gate says {outcome.report.verdict.value}")
        sys.stdout.write(styled(FORMATS[format](outcome.report), format, color))
        print()
    rejected = sum(o.report.exit_code == ExitCode.REJECT for o in outcomes)
    print(
        f"demo: {len(outcomes)} agent patches, {rejected} rejected, "
        f"{len(outcomes) - rejected} merged; "
        f"every verdict as expected: {all(_as_expected(o) for o in outcomes)}"
    )


def cmd_demo(args: argparse.Namespace) -> int:
    with progress_on_tty():
        outcomes = run_demo(today(args.today), PATCHES)
    if args.format in _DOCUMENTS:
        sys.stdout.write(_DOCUMENTS[args.format](outcomes))
    else:
        _print_readable(outcomes, args.format, args.color)
    return ExitCode.MERGE if all(_as_expected(o) for o in outcomes) else ExitCode.REJECT
