"""``oracle-gate freeze`` and ``oracle-gate seeds``: the human edits of a package's ledgers.

They write flake_freeze.yaml and seeds.jsonl the way the ledger lane accepts
(config/ledger_edit.py) and are refused where CI is set or for an agent.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
from pathlib import Path

from oracle_gate import backend
from oracle_gate.cli.common import refuse_unless_human, repo_root, today
from oracle_gate.config.ledger_edit import freeze_add, freeze_extend, freeze_remove, retire_seed
from oracle_gate.config.ledgers import FREEZE_FILE, SEEDS_FILE, parse_seeds, read_ledger
from oracle_gate.errors import ConfigError, fault
from oracle_gate.graph import PackageGraph, load_packages
from oracle_gate.model import ExitCode, Package
from oracle_gate.repo.files import replace_file
from oracle_gate.repo.trees import WorkTree

__all__ = ["add_freeze_arguments", "add_seeds_arguments", "cmd_freeze", "cmd_seeds"]

_PARAMETRIZE_SUFFIX = re.compile(r"\[.*\]$")
_NOTE_HINT = (
    "a human note must come with it: an ORACLE_CHANGELOG.md entry naming the parent "
    "commit and {path}, or an 'Oracle-Change: {path} — <reason>' trailer"
)
_TRIAGE_HINT = (
    "commit it with a 'Freeze-Triage: <reviewer>' trailer, or with a human note for {path}"
)


def add_freeze_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    key_help = (
        "a test node id, repo-relative (libs/a/tests/test_x.py::test_y), "
        "or ROW:INPUT_HASH of a flaky partition input with --package"
    )
    add = actions.add_parser("add", help="freeze a flaky test or partition input")
    extend = actions.add_parser("extend", help="move a freeze's expiry later")
    remove = actions.add_parser("remove", help="thaw: remove a freeze")
    for sub in (add, extend, remove):
        _add_repo(sub)
        sub.add_argument("key", metavar="NODEID", help=key_help)
        sub.add_argument("--package", metavar="PKG", help="the package of a ROW:INPUT_HASH key")
    add.add_argument("--reason", required=True, help="why it is frozen")
    add.add_argument("--owner", required=True, help="who answers for the freeze")
    add.add_argument("--expires", required=True, type=_date, help="YYYY-MM-DD, after today")
    add.add_argument("--replacement-row", help="the row that covers the frozen case meanwhile")
    add.add_argument("--today", help="judge the expiry as of this YYYY-MM-DD date")
    extend.add_argument("--expires", required=True, type=_date, help="the new YYYY-MM-DD")
    extend.add_argument("--reason", help="a new reason")


def add_seeds_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="print every seed: file:line, status, row, property")
    listing.add_argument("packages", nargs="*", metavar="PKG", help="package directories")
    _add_repo(listing)
    retire = actions.add_parser("retire", help="retire one seed (status retired + retired_by)")
    retire.add_argument("where", metavar="FILE:LINE", help="as 'seeds list' prints it")
    retire.add_argument("--by", required=True, help="who retires it (recorded as retired_by)")
    _add_repo(retire)


def _add_repo(parser: argparse.ArgumentParser) -> None:
    # On each action, so that it may follow the action as it does for other commands.
    parser.add_argument("--repo", help="repository directory (default: the enclosing git repo)")


def _date(text: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a YYYY-MM-DD date, found {text!r}") from None


def _node_exists(tree: WorkTree, package: Package, nodeid: str) -> bool:
    file, _, unit = _PARAMETRIZE_SUFFIX.sub("", nodeid).partition("::")
    path = package.join(file)
    if not (tree.root / path).is_file():
        return False
    return not unit or unit in dict(backend.extract_units(tree.read(path), path))


def _target(
    tree: WorkTree, graph: PackageGraph, key: str, package_name: str | None
) -> tuple[Package, dict[str, str]]:
    """The package a freeze key belongs to, and the key as the ledger writes it."""
    if "::" in key or key.endswith(".py"):
        if package_name:
            raise ConfigError("--package is for ROW:INPUT_HASH keys; a node id names its package")
        package = graph.package_of(key.partition("::")[0])
        if package is None:
            raise ConfigError(f"no package encloses {key!r}; give the node id repo-relative")
        relative = key[len(package.path) + 1 :] if package.path else key
        return package, {"nodeid": relative}
    row, _, input_hash = key.partition(":")
    if not (row and input_hash and package_name):
        raise ConfigError(f"{key!r} is neither PATH::TEST nor ROW:INPUT_HASH with --package")
    package = graph.resolve(package_name)
    if row not in {r.id for r in package.matrix.rows}:
        raise ConfigError(f"package {package.path or '.'} has no row {row!r}")
    return package, {"row": row, "input_hash": input_hash}


def _write(repo: Path, file: Path, content: bytes) -> None:
    """``content`` put in place of the ledger ``file`` of ``repo``, atomically.

    Raises:
        FaultError: the file system refused (read-only, full).
    """
    try:
        replace_file(file, content)
    except OSError as error:
        raise fault(error, "write the ledger", str(repo)) from None


def cmd_freeze(args: argparse.Namespace) -> int:
    refuse_unless_human(f"freeze {args.action}")
    repo = repo_root(args.repo)
    tree = WorkTree(repo)
    package, key = _target(tree, PackageGraph(load_packages(tree)), args.key, args.package)
    path = package.join(FREEZE_FILE)
    file = repo / path
    text = read_ledger(tree, path)
    ledger_key = key.get("nodeid") or f"{key.get('row')}:{key.get('input_hash')}"
    if args.action == "add":
        if "nodeid" in key and not _node_exists(tree, package, key["nodeid"]):
            raise ConfigError(f"no test {key['nodeid']!r} in package {package.path or '.'}")
        entry = {**key, "reason": args.reason, "owner": args.owner, "expires": args.expires}
        if args.replacement_row:
            entry["replacement_row"] = args.replacement_row
        content = freeze_add(text, path, entry, today(args.today))
    elif text is None:
        raise ConfigError(f"{path} does not exist; nothing is frozen")
    elif args.action == "extend":
        content = freeze_extend(text, path, ledger_key, args.expires, args.reason)
    else:
        content = freeze_remove(text, path, ledger_key)
    _write(repo, file, content)
    print(f"wrote {path}: {args.action} {ledger_key}")
    print((_TRIAGE_HINT if args.action == "add" else _NOTE_HINT).format(path=path))
    return ExitCode.MERGE


def _seed_files(repo: Path, names: list[str]) -> list[str]:
    graph = PackageGraph(load_packages(WorkTree(repo)))
    packages = (
        [graph.resolve(name) for name in names]
        if names
        else [graph.packages[p] for p in sorted(graph.packages)]
    )
    # Listed unless absent: a FIFO or directory by the name is an error when read.
    return [p.join(SEEDS_FILE) for p in packages if os.path.lexists(repo / p.join(SEEDS_FILE))]


def _list_seeds(repo: Path, names: list[str]) -> None:
    tree = WorkTree(repo)
    for path in _seed_files(repo, names):
        for seed in parse_seeds(read_ledger(tree, path) or b"", path):
            data = seed.data
            status = data.get("status", "active")
            if status == "retired":
                status = f"retired by {data.get('retired_by')}"
            print(
                f"{path}:{seed.line}  {status}  {data['row']} {data['prop']} "
                f"expect {data['expect']}  input {json.dumps(data['input'])}"
                + (f"  ({data['note']})" if data.get("note") else "")
            )


def _retire(repo: Path, where: str, by: str) -> None:
    path, _, line = where.rpartition(":")
    if not path or not line.isdigit():
        raise ConfigError(
            f"expected FILE:LINE as 'oracle-gate seeds list' prints it, found {where!r}"
        )
    file = repo / path
    text = read_ledger(WorkTree(repo), path) if file.name == SEEDS_FILE else None
    if text is None:
        raise ConfigError(f"is not a {SEEDS_FILE} of this repository", path)
    _write(repo, file, retire_seed(text, path, int(line), by))
    print(f"wrote {path}: line {line} retired by {by}")


def cmd_seeds(args: argparse.Namespace) -> int:
    repo = repo_root(args.repo)
    if args.action == "list":
        _list_seeds(repo, args.packages)
    else:
        refuse_unless_human("seeds retire")
        _retire(repo, args.where, args.by)
    return ExitCode.MERGE
