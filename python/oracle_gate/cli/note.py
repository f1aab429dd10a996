"""``oracle-gate note PATH... --reason TEXT``: a human notes oracle changes in ORACLE_CHANGELOG.md.

Each path gets a line ``- `PATH` blake3:<digest>`` (``deleted`` when it is gone;
a test unit ``FILE::UNIT`` gets the digest of its canonical assertion surface)
under one new heading in the changelog of the package that owns it (the root
changelog for paths outside every package). The digest is of the working-tree
file, so the note holds whatever the patch is rebased onto, as long as the
committed content is the content noted.
"""

from __future__ import annotations

import argparse
import datetime
import os
import posixpath
from pathlib import Path

from oracle_gate.cli.common import refuse_unless_human, repo_root
from oracle_gate.config.ledgers import read_ledger
from oracle_gate.config.notes import CHANGELOG_FILE, unit_digest
from oracle_gate.errors import ConfigError, fault
from oracle_gate.graph import PackageGraph, load_packages
from oracle_gate.model import ExitCode
from oracle_gate.repo.files import replace_file
from oracle_gate.repo.trees import WorkTree

__all__ = ["cmd_note"]


def _repo_path(repo: Path, given: str) -> str:
    """``given`` (relative to the current directory) as a repo-relative POSIX path.

    Directories are resolved, the last component is not: a noted symlink stays itself.
    """
    absolute = Path(os.path.realpath(os.path.dirname(os.path.abspath(given)))) / Path(given).name
    try:
        relative = absolute.relative_to(repo)
    except ValueError:
        raise ConfigError("is outside the repository", given) from None
    if not relative.parts:
        raise ConfigError("names the repository itself, not a file", given)
    return relative.as_posix()


def _content(tree: WorkTree, path: str, unit: str) -> str:
    if not (tree.root / path).exists():
        return "deleted"
    if (tree.root / path).is_dir():
        raise ConfigError("is a directory; note each file", path)
    if not unit:
        return "blake3:" + tree.digests([path])[0]
    digest = unit_digest(tree.read(path), path, unit)
    return "deleted" if digest is None else f"blake3:{digest}"


def cmd_note(args: argparse.Namespace) -> int:
    refuse_unless_human("note")
    reason = " ".join(args.reason.split())
    if not reason:
        raise ConfigError("--reason must say why the oracle changed")
    repo = repo_root(args.repo)
    tree = WorkTree(repo)
    graph = PackageGraph(load_packages(tree))
    lines: dict[str, list[str]] = {}
    for given in args.paths:
        file, separator, unit = given.partition("::")
        path = _repo_path(repo, file)
        package = graph.package_of(path)
        directory = package.path if package else ""
        name = (package.relative(path) if package else path) + separator + unit
        content = _content(tree, path, unit)
        lines.setdefault(directory, []).append(f"- `{name}` {content}\n")
    heading = f"\n## {datetime.date.today().isoformat()}: {reason}\n\n"
    for directory, entries in sorted(lines.items()):
        changelog = posixpath.join(directory, CHANGELOG_FILE)
        # Read as a ledger: a FIFO or a device by the name is an error, not a wait.
        existing = (read_ledger(tree, changelog) or b"").decode("utf-8", "replace")
        separator = "" if not existing or existing.endswith("\n") else "\n"
        text = existing + separator + heading + "".join(entries)
        try:
            replace_file(repo / changelog, text.encode("utf-8"))
        except OSError as error:
            raise fault(error, "write the changelog", str(repo)) from None
        print(f"noted {len(entries)} path(s) in {changelog}")
    return ExitCode.MERGE
