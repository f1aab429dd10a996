"""What a Bazel gate target runs: ``lock --matrix/--label/--ledgers/--rows/--junit``.

The launcher (``rules/private/launcher.sh.tpl``) calls ``oracle-gate lock`` on
one package with the matrix Bazel built; these helpers read that matrix, check
the ledgers, run the rows' one-tree checks, and write JUnit for Bazel.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from oracle_gate.cli.common import today
from oracle_gate.config.ledgers import (
    ASSUMPTIONS_FILE,
    FREEZE_FILE,
    SEEDS_FILE,
    check_seed_refs,
    parse_assumptions,
    parse_freeze,
    parse_seeds,
    read_ledger,
)
from oracle_gate.config.matrix import parse_matrix
from oracle_gate.errors import ConfigError, GateError
from oracle_gate.formats.junit import Case, render_suite
from oracle_gate.graph import PackageGraph
from oracle_gate.model import Matrix, Package, Verdict
from oracle_gate.repo.trees import WorkTree
from oracle_gate.runtime.judge import RowEnv, judge_rows
from oracle_gate.runtime.sandbox import Runner, library_paths

__all__ = ["ledger_cases", "manifest_package", "package_dir", "row_cases", "write_junit"]


def package_dir(repo: Path, name: str, against: Path | None = None) -> str:
    """The repo-relative directory of ``name``, relative to ``against`` (default: the
    current directory; ``lock --repo DIR`` passes DIR).

    Raises:
        ConfigError: it is not a directory inside ``repo``.
    """
    absolute = ((against or Path.cwd()) / name).resolve()
    if not absolute.is_dir():
        raise ConfigError("package directory does not exist", name)
    try:
        relative = absolute.relative_to(repo.resolve()).as_posix()
    except ValueError:
        raise ConfigError(f"is outside the repository {repo}", name) from None
    return "" if relative == "." else relative


def manifest_package(
    repo: Path, manifest: str, names: list[str], against: Path | None = None
) -> tuple[PackageGraph, list[Package]]:
    """The one package ``lock --matrix`` checks, with the matrix a Bazel gate target built.

    Raises:
        ConfigError: more than one PKG, an unreadable manifest, or one that
            breaks the invariants.yaml schema.
    """
    if len(names) > 1:
        raise ConfigError("--matrix describes one package; name at most one PKG")
    directory = package_dir(repo, names[0] if names else ".", against)
    try:
        text = Path(manifest).read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read the matrix manifest ({error.strerror})", manifest) from None
    # A Bazel gate's deps are other gate targets, which Bazel has already
    # resolved; their matrices are not here and the lock never depends on them.
    matrix = dataclasses.replace(parse_matrix(text, manifest), deps=())
    package = Package(path=directory, matrix=matrix)
    return PackageGraph({directory: package}), [package]


def _seeds_of(matrix: Matrix) -> Callable[[bytes, str], None]:
    """Parse seeds.jsonl and check that each seed names a row and property of ``matrix``."""
    return lambda text, path: check_seed_refs(parse_seeds(text, path), [matrix], path)


def ledger_cases(
    tree: WorkTree, packages: list[Package], label: str | None
) -> tuple[list[tuple[str, str]], list[Case]]:
    """Printed lines and JUnit cases for each ledger the packages hold: does it parse?"""
    lines: list[tuple[str, str]] = []
    cases: list[Case] = []
    for package in packages:
        classname = label or package.path or "."
        parsers: tuple[tuple[str, Callable[[bytes, str], object]], ...] = (
            (SEEDS_FILE, _seeds_of(package.matrix)),
            (FREEZE_FILE, parse_freeze),
            (ASSUMPTIONS_FILE, parse_assumptions),
        )
        for name, parse in parsers:
            path = package.join(name)
            try:
                # A FIFO or a device by the name is an error, not a ledger left out.
                text = read_ledger(tree, path)
                if text is None:
                    continue
                parse(text, path)
            except GateError as error:
                prefix = f"ERROR: {label}: " if label else "oracle-gate: error: "
                lines.append(("err", f"{prefix}{error}"))
                cases.append(Case(classname, path, error=str(error)))
            else:
                lines.append(("out", f"ok {path}"))
                cases.append(Case(classname, path))
    return lines, cases


def row_cases(
    repo: Path, tree: WorkTree, packages: list[Package], label: str | None
) -> tuple[list[tuple[str, str]], list[Case]]:
    """Printed lines and JUnit cases for the rows' checks that need only this tree.

    Relations compare parent and head, so only ``check`` runs them; new
    counterexamples are reported, never appended, since this tree is not a
    working copy (it may be Bazel's read-only runfiles).
    """
    env = RowEnv(
        head=tree,
        head_dir=repo,
        parent_dir=None,
        parent_packages=frozenset(),
        today=today(None),
        seed_sink=None,
        head_name="this tree",
        freezes_from=tree,
        freezes_expire=False,
        # Bazel's own sandbox isolates the action (and its runfiles symlink trees
        # may point anywhere, so bubblewrap's private /tmp could hide them).
        runner=Runner(library=library_paths(exclude=())),
    )
    findings, _ = judge_rows([(p, row) for p in packages for row in p.matrix.rows], env)
    lines: list[tuple[str, str]] = []
    cases: list[Case] = []
    for finding in findings:
        name = f"{finding.path} [{finding.row}]" if finding.row else str(finding.path)
        if finding.verdict is Verdict.REJECT:
            prefix = f"FAIL: {label}: " if label else "FAIL "
            lines.append(("err", f"{prefix}{name}: {finding.reason}"))
            cases.append(Case(label or finding.package or ".", name, failure=finding.reason))
        else:
            lines.append(("out", f"ok {name}: {finding.reason}"))
            cases.append(Case(label or finding.package or ".", name))
    return lines, cases


def write_junit(path: str | None, label: str | None, cases: list[Case]) -> None:
    if path is None:
        return
    try:
        suite = render_suite(label or "oracle-gate lock", cases)
        Path(path).write_text(suite, encoding="utf-8", errors="backslashreplace")
    except OSError as error:
        raise ConfigError(f"cannot write JUnit ({error.strerror})", path) from None
