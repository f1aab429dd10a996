"""``oracle-gate init``: scaffold a package for the gate, or the repository's root files.

It only ever creates files: when any file it would write exists, it writes
nothing and says which, so a human's matrix or ledger is never replaced.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from oracle_gate.cli.bazel_gate import package_dir
from oracle_gate.cli.common import repo_root
from oracle_gate.config.ledgers import (
    ASSUMPTIONS_FILE,
    FREEZE_FILE,
    SEEDS_FILE,
    parse_assumptions,
    parse_freeze,
    parse_seeds,
)
from oracle_gate.config.matrix import MATRIX_FILE, parse_matrix
from oracle_gate.config.owners import CODEOWNERS_PATHS
from oracle_gate.config.package_layout import PROPS_FILE, Layout, read_layout
from oracle_gate.config.public_api import public_functions
from oracle_gate.config.scaffold import package_files, render_codeowners, render_settings
from oracle_gate.config.settings import PYPROJECT, SETTINGS_FILE
from oracle_gate.errors import ConfigError, RefusedError
from oracle_gate.graph import load_packages
from oracle_gate.model import ExitCode
from oracle_gate.repo.trees import WorkTree

__all__ = ["add_init_arguments", "cmd_init"]


def add_init_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "package", nargs="?", metavar="PKG", help="the package directory to scaffold"
    )
    parser.add_argument(
        "--root",
        action="store_true",
        help=f"write the root settings ({SETTINGS_FILE}) and a CODEOWNERS stub",
    )
    parser.add_argument(
        "--owner",
        action="append",
        default=[],
        help="an owner of the package (repeatable), e.g. @team",
    )


def _refuse_existing(root: Path, paths: list[str]) -> None:
    existing = [path for path in paths if (root / path).exists()]
    if existing:
        more = f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
        raise RefusedError(
            f"init never overwrites: {existing[0]} exists{more}; remove it or edit it by hand"
        )


def _validated(files: dict[str, str], prefix: str) -> None:
    """Parse each file with the gate's own reader: init writes nothing the gate refuses."""
    for name, parse in (
        (MATRIX_FILE, parse_matrix),
        (SEEDS_FILE, parse_seeds),
        (FREEZE_FILE, parse_freeze),
        (ASSUMPTIONS_FILE, parse_assumptions),
        (PROPS_FILE, public_functions),
    ):
        parse(files[name].encode(), prefix + name)


def _package_layout(repo: Path, directory: str) -> Layout:
    prefix = f"{directory}/" if directory else ""
    tree = WorkTree(repo)
    files = [p[len(prefix) :] for p in tree.files() if p.startswith(prefix)]
    sources = {p: tree.read(prefix + p) for p in files if p.endswith((".py", ".pyi"))}
    return read_layout(files, sources, prefix)


def _tooling(directory: str, layout: Layout) -> list[str]:
    """The layout's tooling globs, repository-relative."""
    return [f"{directory}/{glob}" if directory else glob for glob in layout.tooling]


def _package_rendered(
    repo: Path, directory: str, layout: Layout, owners: list[str]
) -> dict[str, str]:
    """The package's files, checked: none exists yet, each parses with the gate's reader."""
    prefix = f"{directory}/" if directory else ""
    rendered = package_files(directory or ".", layout, owners)
    _refuse_existing(repo, [prefix + path for path in rendered])
    _validated(rendered, prefix)
    return rendered


def _init_package(
    repo: Path, directory: str, layout: Layout, rendered: dict[str, str], settings_written: bool
) -> None:
    prefix = f"{directory}/" if directory else ""
    for path, text in rendered.items():
        (repo / prefix / path).write_text(text, encoding="utf-8")
    stubs = sum(len(unit.functions) or 1 for unit in layout.sources)
    print(
        f"wrote {', '.join(prefix + p for p in rendered)}: {len(layout.sources)} row(s), "
        f"{stubs} property stub(s) in {prefix}{PROPS_FILE} that fail until written"
    )
    tooling = _tooling(directory, layout)
    if tooling and not settings_written:
        print(
            f"no row guards {', '.join(tooling)}: production until one does; if they neither "
            f"ship nor run in the tests, list them in 'tooling' in {SETTINGS_FILE}"
        )


def _refuse_root(repo: Path) -> None:
    pyproject = repo / PYPROJECT
    if pyproject.is_file() and "[tool.oracle-gate]" in pyproject.read_text(errors="replace"):
        raise RefusedError(f"{PYPROJECT} already has [tool.oracle-gate]; keep the settings there")
    _refuse_existing(repo, [SETTINGS_FILE])


def _init_root(repo: Path, tooling: list[str]) -> None:
    owners_file = next((p for p in CODEOWNERS_PATHS if (repo / p).exists()), None)
    written = [SETTINGS_FILE]
    (repo / SETTINGS_FILE).write_text(render_settings(tooling), encoding="utf-8")
    if owners_file is None:
        packages = load_packages(WorkTree(repo))
        owners = {path: package.matrix.owners for path, package in packages.items()}
        (repo / CODEOWNERS_PATHS[0]).write_text(render_codeowners(owners), encoding="utf-8")
        written.append(CODEOWNERS_PATHS[0])
    else:
        print(f"kept {owners_file}: the repository already names its owners")
    print(f"wrote {', '.join(written)}")


def cmd_init(args: argparse.Namespace) -> int:
    if not args.package and not args.root:
        raise ConfigError("init needs PKG, --root, or both")
    repo = repo_root(args.repo)
    # Everything is checked before anything is written: a refusal leaves the tree as it was.
    if args.root:
        _refuse_root(repo)
    layout, directory, rendered = None, "", {}
    if args.package:
        # PKG names a directory of --repo DIR when it is given, as for lock.
        directory = package_dir(repo, args.package, repo if args.repo else Path.cwd())
        layout = _package_layout(repo, directory)
        rendered = _package_rendered(repo, directory, layout, args.owner)
    if layout is not None:
        _init_package(repo, directory, layout, rendered, settings_written=args.root)
    if args.root:
        _init_root(repo, _tooling(directory, layout) if layout else [])
    return ExitCode.MERGE
