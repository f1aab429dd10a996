"""Matrix lane: a row removed or narrowed is the oracle shrinking; widening is free."""

from __future__ import annotations

import posixpath

from oracle_gate.bazel.glob import package_files
from oracle_gate.bazel.labels import BUILD_NAMES
from oracle_gate.bazel.read import Value, parse_build
from oracle_gate.classify import lane_in
from oracle_gate.errors import ConfigError
from oracle_gate.facts import Facts, LanedPath
from oracle_gate.graph.moves import boundary_moves
from oracle_gate.lanes.common import oracle_move, summarize
from oracle_gate.model import Change, ChangeKind, Finding, Lane, Matrix, Row, Verdict

__all__ = ["check_boundaries", "judge", "narrowings"]

_ROW_LISTS = ("globs", "properties", "partitions", "relations", "fixtures")
_TOP_LISTS = ("owners", "tests", "fixtures", "deps")
# Attributes of a Bazel gate's test that decide whether and how Bazel runs it, not what
# it checks: tags = ["manual"] leaves it out of `bazel test //...`, an incompatible
# target_compatible_with skips it, flaky retries a failure, env changes what it reads.
_TEST_ATTRIBUTES = frozenset(
    {
        "tags",
        "target_compatible_with",
        "exec_compatible_with",
        "exec_properties",
        "flaky",
        "env",
        "env_inherit",
        "local",
        "shard_count",
        "args",
        "testonly",
    }
)


def _lost(
    before: Row | Matrix, after: Row | Matrix, names: tuple[str, ...], prefix: str
) -> list[str]:
    """``{prefix}lost {name} a, b`` for each list attribute that lost entries."""
    found = []
    for name in names:
        lost = sorted(set(getattr(before, name)) - set(getattr(after, name)))
        if lost:
            found.append(f"{prefix}lost {name} {', '.join(lost)}")
    return found


def _row_narrowings(before: Row, after: Row) -> list[str]:
    found = _lost(before, after, _ROW_LISTS, f"row '{before.id}' ")
    if after.budget.examples < before.budget.examples:
        found.append(f"row '{before.id}' budget.examples lowered")
    if after.budget.seconds < before.budget.seconds:
        found.append(f"row '{before.id}' budget.seconds lowered")
    return found


def narrowings(before: Matrix, after: Matrix) -> list[str]:
    """Every way ``after`` guards less than ``before``."""
    found = _lost(before, after, _TOP_LISTS, "")
    rows_after = {row.id: row for row in after.rows}
    for row in before.rows:
        if row.id not in rows_after:
            found.append(f"row '{row.id}' removed")
        else:
            found.extend(_row_narrowings(row, rows_after[row.id]))
    return found


def _decorative_rows(before: Matrix | None, after: Matrix) -> list[str]:
    """Rows that guard new paths with no property, partition or relation.

    Such a row makes production "guarded" while checking nothing. Rows the parent
    already had, with the globs it already had, are left as they were.
    """
    old = {row.id: row for row in before.rows} if before else {}
    found = []
    for row in after.rows:
        if row.properties or row.partitions or row.relations:
            continue
        previous = old.get(row.id)
        if previous is None or set(row.globs) - set(previous.globs):
            found.append(f"row '{row.id}' guards {', '.join(row.globs)}")
    return found


def _claimed_production(laned: LanedPath, facts: Facts) -> list[str]:
    """Paths production in the parent that the head's globs call tests, fixtures or oracle."""
    directory = posixpath.dirname(laned.path)
    before = facts.parent_graph.packages.get(directory)
    after = facts.head_graph.packages.get(directory)
    if before is None or after is None:
        return []
    docs = facts.settings.docs
    files = package_files(facts.parent.files(), directory, facts.parent_graph.packages.keys())
    return [
        path
        for path in files
        if lane_in(path, before, False, docs) is Lane.PRODUCTION
        and lane_in(path, after, False, docs) is not Lane.PRODUCTION
    ]


def _test_attributes(text: bytes, path: str) -> dict[str, dict[str, Value]]:
    """Each gate call of a BUILD file, by name: its test attributes as written, and as
    ``**`` what the reader could not splice in (``**EXTRA``, loaded): it may hold any."""
    return {
        str(call.get("name")): {
            **{k: v for k, v in call.kwargs if k in _TEST_ATTRIBUTES},
            **({"**": call.args} if call.args else {}),
        }
        for call in parse_build(text, path).gates
    }


def _test_attributes_changed(laned: LanedPath, facts: Facts) -> list[str]:
    """``gate: tags, flaky`` for each gate of a BUILD file whose test attributes changed."""
    if posixpath.basename(laned.path) not in BUILD_NAMES:
        return []
    before, after = facts.read_pair(laned.change)
    if before is None or after is None:
        return []
    try:
        old = _test_attributes(before, laned.change.old_path or laned.path)
        new = _test_attributes(after, laned.path)
    except ConfigError:
        return []  # the graph reports a BUILD file that does not parse
    changed = []
    for name in sorted(old.keys() & new.keys()):
        keys = sorted(
            k for k in old[name].keys() | new[name].keys() if old[name].get(k) != new[name].get(k)
        )
        if keys:
            changed.append(f"{name}: {', '.join(keys)}")
    return changed


def judge(laned: LanedPath, facts: Facts) -> list[Finding]:
    if laned.change.kind is ChangeKind.DELETED:
        return [oracle_move(laned, facts, "matrix deleted: the package's rows are gone")]
    old_path = laned.change.old_path or laned.path
    after = facts.head_graph.matrix_declared_by(laned.path)
    if after is None:
        return [oracle_move(laned, facts, "oracle_gate() removed: the package's rows are gone")]
    before = facts.parent_graph.matrix_declared_by(old_path)
    problems = []
    if before is not None:
        lost = narrowings(before, after)
        claimed = _claimed_production(laned, facts)
        if claimed:
            lost.append(f"tests, fixtures or oracle now claim production {summarize(claimed)}")
        if lost:
            problems.append("matrix narrowed: " + "; ".join(lost))
    attributes = _test_attributes_changed(laned, facts)
    if attributes:
        problems.append(
            f"the gate's test attributes changed ({'; '.join(attributes)}): Bazel may skip, "
            "retry or reconfigure the gate"
        )
    decorative = _decorative_rows(before, after)
    if decorative:
        problems.append(
            f"decorative {summarize(decorative, '; ')}: a row must reference a property, "
            "partition or relation"
        )
    if problems:
        return [oracle_move(laned, facts, "; ".join(problems))]
    if before is None:
        return [laned.finding(Verdict.PASS, "matrix added: a new package declares its rows")]
    return [laned.finding(Verdict.PASS, "matrix unchanged or widened")]


def check_boundaries(facts: Facts) -> list[Finding]:
    """A package whose files the head gives to another package (or to none) was narrowed.

    Reported at the parent's matrix file: reject unless a human note covers it.
    """
    findings = []
    for directory, paths in boundary_moves(facts).items():
        package = facts.parent_graph.packages[directory]
        owners = sorted(
            {
                (found.path or ".") if found else "no package"
                for found in map(facts.head_graph.package_of, paths)
            }
        )
        laned = LanedPath(
            Change(package.join(package.matrix_file), ChangeKind.MODIFIED), Lane.MATRIX, package
        )
        reason = (
            f"matrix narrowed: {len(paths)} file(s) of package {directory or '.'} now belong to "
            f"{', '.join(owners)} ({summarize(list(paths))}); a patch cannot move a package "
            "boundary, and this package's rows still run on them"
        )
        findings.append(oracle_move(laned, facts, reason))
    return findings
