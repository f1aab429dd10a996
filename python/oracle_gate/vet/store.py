"""Vet results in the user's cache, filed under a key made of the content they judged.

The key of a row covers what its score depends on, read from git objects: the
row's declaration, the blob ids of every file in its package's directory and
in the directories of the packages it depends on (production, oracles, seeds),
and ``VET_VERSION`` (the operators). A commit where none of that changed has
the same key, so ``check --require-vetted`` finds the parent's result even when
vet ran on another commit with the same content. The vet budget and seed are
not in the key: the entry records them, and the last vet of that content wins.

Entries live in ``<cache_dir>/vet/<key>.json`` (``repo/cache.py``), never in
the working tree.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from blake3 import blake3

from oracle_gate.graph import PackageGraph
from oracle_gate.model import Package, Row
from oracle_gate.repo.cache import cache_dir
from oracle_gate.repo.trees import GitTree
from oracle_gate.vet.results import RowVet

__all__ = ["VET_VERSION", "load_row", "row_key", "save_row"]

# Bump when an operator, the mutant choice or the judging changes: old entries then
# stop matching instead of vouching for rows under rules they were not judged by.
VET_VERSION = 1
_DIRECTORY = "vet"


def _inside(path: str, directories: list[str]) -> bool:
    return any(not d or path == d or path.startswith(d + "/") for d in directories)


def row_key(tree: GitTree, graph: PackageGraph, package: Package, row: Row) -> str:
    """The content key of ``row`` of ``package`` in ``tree`` (a hex digest)."""
    directories = [package.path, *graph.dependencies(package.path)]
    files = [path for path in tree.files() if _inside(path, directories)]
    document = {
        "vet": VET_VERSION,
        "package": package.path,
        "row": {
            "id": row.id,
            "globs": list(row.globs),
            "properties": list(row.properties),
            "partitions": list(row.partitions),
            "relations": list(row.relations),
            "fixtures": list(row.fixtures),
            "budget": [row.budget.examples, row.budget.seconds],
        },
        "files": sorted(tree.blob_ids(files).items()),
    }
    return blake3(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]


def _entry(repo: Path, key: str) -> Path:
    return cache_dir(repo) / _DIRECTORY / f"{key}.json"


def save_row(repo: Path, result: RowVet, extra: dict[str, object]) -> None:
    """File ``result`` under its key; a cache that cannot be written is left alone (vet's
    report still says everything; only ``check --require-vetted`` will not find it)."""
    target = _entry(repo, result.key)
    text = json.dumps({**extra, "result": result.to_json()}, sort_keys=True, indent=1)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text + "\n", encoding="utf-8")
        partial.replace(target)  # whole, or not at all: a reader never sees half an entry
    except OSError:
        return


def load_row(repo: Path, key: str) -> RowVet | None:
    """The cached result filed under ``key``, or None when there is none (or it is
    unreadable: an entry the gate cannot read vouches for nothing)."""
    try:
        data = json.loads(_entry(repo, key).read_text(encoding="utf-8"))
        return RowVet.from_json(data["result"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
