"""``propose()``: candidate assumption rows from a patch, written as ``status: proposed``.

The patch is read from git objects (parent: the merge-base of ``base`` and
``head``). The rules (``rules.py``) run on each changed function of each
changed production file; an external proposer, if given, reads the patch as a
unified diff on its standard input. Every candidate passes the same discard
rule (``candidates.py``); the kept ones are appended, numbered, to the touched
packages' ``assumptions.yaml`` in the working tree, and nothing else is written.
A candidate the register already holds (same symbol and precondition) is not
added again, so running propose twice adds nothing.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from oracle_gate.config.ledger_edit import assumptions_add
from oracle_gate.config.ledgers import ASSUMPTIONS_FILE, parse_assumptions
from oracle_gate.errors import ConfigError
from oracle_gate.graph import PackageGraph, load_packages
from oracle_gate.model import ChangeKind, Package
from oracle_gate.propose.candidates import (
    Candidate,
    Symbols,
    check_candidate,
    parse_proposer_output,
    proposer_candidate,
    top_level_names,
)
from oracle_gate.propose.changes import (
    Changed,
    DiffLines,
    changed_functions,
    diff_lines,
    module_of,
    parse_text,
)
from oracle_gate.propose.rules import RULES
from oracle_gate.repo.diff import read_diff
from oracle_gate.repo.git import git
from oracle_gate.repo.trees import GitTree
from oracle_gate.vet.run import production_file

__all__ = ["Proposed", "propose"]

PROPOSER_TIMEOUT = 300.0
_NUMBERED = re.compile(r"A(\d+)$")


@dataclass(frozen=True)
class Proposed:
    """What propose wrote (register path, item) and what it discarded (candidate, why)."""

    written: tuple[tuple[str, dict[str, str]], ...]
    discarded: tuple[tuple[Candidate, str], ...]


@dataclass(frozen=True)
class _Patch:
    parent: GitTree
    head: GitTree
    graph: PackageGraph
    files: Mapping[str, tuple[Package, str | None, str]]  # path -> (package, parent, head text)


def _text(tree: GitTree, path: str | None) -> str | None:
    data = tree.read_optional(path) if path else None
    return data.decode("utf-8", "replace") if data is not None else None


def _patch(repo: Path, base: str, head: str) -> _Patch:
    diff = read_diff(repo, base, head)
    parent, after = GitTree(repo, diff.base), GitTree(repo, diff.head)
    graph = PackageGraph(load_packages(after))
    files: dict[str, tuple[Package, str | None, str]] = {}
    for change in diff.changes:
        package = graph.package_of(change.path)
        if change.kind is ChangeKind.DELETED or package is None:
            continue
        if not production_file(package, package.relative(change.path)):
            continue
        text = _text(after, change.path)
        if text is not None:
            files[change.path] = (package, _text(parent, change.old_path or change.path), text)
    return _Patch(parent, after, graph, files)


def _symbols(patch: _Patch) -> Symbols:
    """Top-level names of every production module of the touched packages, in the head."""
    packages = {package.path: package for package, _, _ in patch.files.values()}
    modules: dict[str, tuple[str, frozenset[str]]] = {}
    for path in patch.head.files():
        package = patch.graph.package_of(path)
        if package is None or package.path not in packages:
            continue
        module = module_of(package, path)
        if module is None or not production_file(package, package.relative(path)):
            continue
        tree = parse_text(_text(patch.head, path) or "", path)
        if tree is None:
            continue  # Python cannot import it either: nothing it defines can be resolved
        modules[module] = (package.path, top_level_names(tree))
    return Symbols(modules)


def _evidence(changed: Changed, side: str, line: int) -> str:
    lines = changed.diff.removed if side == "-" else changed.diff.added
    text = lines.get(line)
    return f"{changed.path}:{line}: {side}{text.rstrip()}" if text is not None else ""


def _rule_candidates(patch: _Patch) -> list[Candidate]:
    found = []
    for path, (package, before, after) in sorted(patch.files.items()):
        for changed in changed_functions(package, path, before, after):
            for name, rule in RULES.items():
                for proposal in rule(changed):
                    evidence = _evidence(changed, proposal.side, proposal.line)
                    found.append(
                        Candidate(
                            package.path, changed.symbol, proposal.precondition, evidence, name
                        )
                    )
    return found


def _external(repo: Path, patch: _Patch, command: str, symbols: Symbols) -> list[Candidate]:
    """Run ``command`` with the patch as a unified diff on stdin; its YAML items.

    Raises:
        ConfigError: it cannot start, fails, times out, or prints no valid YAML.
    """
    diff = git(repo, "diff", patch.parent.commit, patch.head.commit)
    where = f"--proposer {command}"
    try:
        done = subprocess.run(
            shlex.split(command),
            input=diff,
            capture_output=True,
            text=True,
            cwd=repo,
            timeout=PROPOSER_TIMEOUT,
            check=False,
        )
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot run ({error})", where) from None
    except subprocess.TimeoutExpired:
        raise ConfigError(f"did not finish within {PROPOSER_TIMEOUT:g}s", where) from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise ConfigError(f"failed: {tail[:200]}", where)
    items = parse_proposer_output(done.stdout, command)
    return [proposer_candidate(item, symbols) for item in items]


def _next_ids(existing: list[str]) -> int:
    numbers = [int(m.group(1)) for i in existing if (m := _NUMBERED.match(i))]
    return max(numbers, default=0) + 1


def propose(repo: Path, base: str, head: str = "HEAD", proposer: str | None = None) -> Proposed:
    """Write the kept candidates of the patch ``base..head`` to the touched registers.

    Raises:
        GitError: a ref does not resolve.
        ConfigError: the proposer cannot run or prints something else than items.
        LedgerError: a touched package's assumptions.yaml is invalid (it is never
            overwritten then).
    """
    patch = _patch(repo, base, head)
    symbols = _symbols(patch)
    candidates = _rule_candidates(patch)
    if proposer:
        candidates += _external(repo, patch, proposer, symbols)
    diffs: dict[str, DiffLines] = {
        path: diff_lines(before or "", after) for path, (_, before, after) in patch.files.items()
    }
    kept: dict[str, list[Candidate]] = {}
    discarded: list[tuple[Candidate, str]] = []
    seen: set[tuple[str, str]] = set()
    for candidate in candidates:
        why = check_candidate(candidate, symbols, diffs)
        if why is not None:
            discarded.append((candidate, why))
        elif (candidate.symbol, candidate.precondition) not in seen:
            seen.add((candidate.symbol, candidate.precondition))
            kept.setdefault(candidate.package, []).append(candidate)
    written: list[tuple[str, dict[str, str]]] = []
    for package_path, chosen in sorted(kept.items()):
        written += _write(repo, patch.graph.packages[package_path], chosen)
    return Proposed(tuple(written), tuple(discarded))


def _write(
    repo: Path, package: Package, chosen: list[Candidate]
) -> list[tuple[str, dict[str, str]]]:
    path = package.join(ASSUMPTIONS_FILE)
    target = repo / path
    text = target.read_bytes() if target.is_file() else None
    existing = parse_assumptions(text or b"", path)
    present = {(str(a.data.get("symbol")), str(a.data.get("precondition"))) for a in existing}
    number = _next_ids([a.id for a in existing])
    items = []
    for candidate in chosen:
        if (candidate.symbol, candidate.precondition) in present:
            continue
        items.append(candidate.item(f"A{number:03d}"))
        number += 1
    if items:
        target.write_bytes(assumptions_add(text, path, items))
    return [(path, item) for item in items]
