"""What the tests of graph/edges/ build: repositories, a tree of files, the package
directories among them, and the edges a scan holds, so that each test writes only what
its construct reads."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from oracle_gate.bazel.workspace.repositories import BuildFileRepository, Repositories
from oracle_gate.graph.reading import Scan
from oracle_gate.repo.trees import WorkTree

__all__ = ["ONE", "VENDORED", "edges", "package_dirs", "repositories", "work_tree"]


def repositories(
    *others: str,
    named: Mapping[str, str] | None = None,
    built: tuple[BuildFileRepository, ...] = (),
    binds: tuple[tuple[str, str], ...] = (),
    unknown: str = "",
) -> Repositories:
    """The main repository at the tree's root and one at each of ``others``, none of them
    calling itself by a name: ``Repositories.root_of`` asks every root for its names."""
    roots = frozenset({"", *others})
    return Repositories(
        roots=roots,
        names=dict.fromkeys(roots, frozenset()),
        named=dict(named or {}),
        built=built,
        binds=binds,
        unknown=unknown,
    )


ONE = repositories()
# ``local_repository(name = "v", path = "vendor/v")``: ``@v//lib`` is ``vendor/v/lib``.
VENDORED = repositories("vendor/v", named={"v": "vendor/v"})


def work_tree(root: Path, files: Mapping[str, str]) -> WorkTree:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return WorkTree(root, cache=False)


def package_dirs(paths: Iterable[str]) -> list[str]:
    """The directories holding a BUILD file among ``paths``, sorted, as the scan has them."""
    return sorted({path.rpartition("/")[0] for path in paths if path.endswith("BUILD")})


def edges(scan: Scan) -> dict[tuple[str, str], str]:
    """Every edge of ``scan`` as (source, target) -> why: the scan keeps them reversed."""
    return {
        (source, target): why
        for target, sources in scan.dependents.items()
        for source, why in sources.items()
    }
