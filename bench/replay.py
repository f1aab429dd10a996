"""The trusted replay on real suites: ``check`` against plain pytest, side by side in one run.

For more-itertools 10.5.0 and toolz 1.0.0 (sdists from PyPI, downloaded into the
user cache, never committed), each set up as a new user would (one
``invariants.yaml`` at the root, a row over the library with a real property,
locked and committed), this prints: plain ``python -m pytest`` of the suite;
``oracle-gate check`` on (a) a comment-only change, (b) a one-function change,
(c) a change to a module every test imports, each with the parent's baseline in
the cache; (d) ten patches on one base one after another, from an empty cache;
and for each the number of tests run again. Targets on a 2-core machine: (a) at
most 0.25x plain pytest, (b) at most 1.5x, (c) at most 3x, (d) one baseline plus
ten head runs.

    python bench/run.py replay [--libraries more-itertools,toolz]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import commit_id

Edit = Callable[[Path], None]
_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "oracle-gate-bench"


def _replace(path: str, old: str, new: str) -> Edit:
    def edit(root: Path) -> None:
        text = (root / path).read_text()
        assert old in text, f"{old!r} not in {path}"
        (root / path).write_text(text.replace(old, new, 1))

    return edit


@dataclass(frozen=True)
class Library:
    """A real library from PyPI and the patches the bench checks on it."""

    name: str
    version: str
    tests: str
    globs: str
    prop_module: str  # props.py: one real property over a plain-data API
    comment: Edit
    one_function: Edit
    imported_by_all: Edit
    ten: tuple[Edit, ...]


MORE_ITERTOOLS_PROPS = """\
from hypothesis import strategies as st

from more_itertools import take


def prop_take(sample):
    items, n = sample
    assert take(n, items) == items[:n]


prop_take.strategy = st.tuples(st.lists(st.integers()), st.integers(0, 5))
"""
TOOLZ_PROPS = """\
from hypothesis import strategies as st

from toolz import frequencies


def prop_counts(items):
    assert sum(frequencies(items).values()) == len(items)


prop_counts.strategy = st.lists(st.integers(0, 5))
"""
MI = "more_itertools/more.py"
TZ = "toolz/itertoolz.py"

LIBRARIES = {
    "more-itertools": Library(
        "more-itertools",
        "10.5.0",
        "tests/test_*.py",
        "more_itertools/**/*.py",
        MORE_ITERTOOLS_PROPS,
        _replace(MI, "\ndef chunked(", "\n# Lists of n items each.\ndef chunked("),
        _replace(
            MI,
            "    iterator = iter(partial(take, n, iter(iterable)), [])\n",
            "    source = iter(iterable)\n    iterator = iter(partial(take, n, source), [])\n",
        ),
        _replace("more_itertools/__init__.py", "__version__ = '10.5.0'", "__version__ = '10.5.1'"),
        tuple(
            _replace(MI, f"\ndef {name}(", f"\n# patch {i}\ndef {name}(")
            for i, name in enumerate(
                (
                    "chunked",
                    "first",
                    "last",
                    "nth_or_last",
                    "one",
                    "spy",
                    "consumer",
                    "ilen",
                    "iterate",
                    "with_iter",
                )
            )
        ),
    ),
    "toolz": Library(
        "toolz",
        "1.0.0",
        "toolz/tests/test_*.py",
        "toolz/**/*.py",
        TOOLZ_PROPS,
        _replace(TZ, "\ndef partition_all(", "\n# Tuples of n items each.\ndef partition_all("),
        _replace(TZ, "    args = [iter(seq)] * n\n", "    args = n * [iter(seq)]\n"),
        _replace(
            "toolz/__init__.py", "sorted = sorted\n", "sorted = sorted  # builtins\n\n_BENCH = 1\n"
        ),
        tuple(
            _replace(TZ, f"\ndef {name}(", f"\n# patch {i}\ndef {name}(")
            for i, name in enumerate(
                (
                    "remove",
                    "accumulate",
                    "groupby",
                    "merge_sorted",
                    "interleave",
                    "unique",
                    "isiterable",
                    "isdistinct",
                    "take",
                    "drop",
                )
            )
        ),
    ),
}


def _sdist(library: Library) -> Path:
    """The library's sdist, downloaded from PyPI once into the user cache."""
    folder = _CACHE / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    found = sorted(folder.glob(f"{library.name.replace('-', '[-_]')}-{library.version}.tar.gz"))
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
                str(folder),
                f"{library.name}=={library.version}",
            ],
            check=True,
        )
        found = sorted(folder.glob(f"{library.name.replace('-', '[-_]')}-*.tar.gz"))
    return found[0]


def _git(root: Path, *args: str) -> str:
    environment = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    done = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        env=environment,
    )
    return done.stdout.strip()


def _gate(root: Path, *args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oracle_gate", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
    )


def _repository(library: Library, where: Path, cache: Path) -> tuple[Path, str]:
    """The library as a gated repository: its sdist, a matrix, a property, a lock."""
    with tarfile.open(_sdist(library)) as archive:
        archive.extractall(where, filter="data")
    (root,) = [p for p in where.iterdir() if p.is_dir()]
    (root / "invariants.yaml").write_text(
        f'version: 1\nowners: ["@bench"]\ntests: ["{library.tests}"]\nrows:\n'
        f'  - id: library\n    globs: ["{library.globs}"]\n'
        '    properties: ["props.py:prop_'
        + ("take" if "take" in library.prop_module else "counts")
        + '"]\n    budget: {examples: 10, seconds: 5}\n'
    )
    (root / "props.py").write_text(library.prop_module)
    for ledger in ("seeds.jsonl", "flake_freeze.yaml", "assumptions.yaml"):
        (root / ledger).write_text("")
    _git(root, "init", "-q", "-b", "main")
    locked = _gate(root, "lock", "--write", ".", cache=cache)
    assert locked.returncode == 0, locked.stdout + locked.stderr
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "gated")
    return root, _git(root, "rev-parse", "HEAD")


@dataclass(frozen=True)
class Checked:
    seconds: float
    verdict: str
    rerun: int | None  # None: every test ran again
    kept: int
    recorded: bool


def _last_health(root: Path, cache: Path) -> dict[str, Any]:
    """The last check's health record of ``root`` (reports hold no counts of reuse)."""
    (record,) = (cache / "oracle-gate").glob(f"{root.resolve().name}-*/health.jsonl")
    last: dict[str, Any] = json.loads(record.read_text().splitlines()[-1])
    return last


def _check(root: Path, base: str, edit: Edit, name: str, cache: Path) -> Checked:
    _git(root, "checkout", "-q", "-B", name, base)
    edit(root)
    _git(root, "commit", "-q", "-am", name)
    started = time.perf_counter()
    done = _gate(root, "check", "--base", base, "--format", "json", cache=cache)
    seconds = time.perf_counter() - started
    report = json.loads(done.stdout)
    replays = _last_health(root, cache)["replays"]
    (replay,) = replays.values()
    return Checked(
        seconds,
        report["verdict"],
        replay["rerun"],
        replay["kept"],
        replay["baseline"] == "recorded",
    )


def _count(rerun: int | None) -> str:
    return "all" if rerun is None else str(rerun)


def _plain(root: Path, library: Library) -> float:
    tests = library.tests.rsplit("/", 1)[0]
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", tests],
        cwd=root,
        capture_output=True,
        check=False,
    )
    return time.perf_counter() - started


def _bench(library: Library, scratch: Path) -> Iterator[str]:
    cache = scratch / "cache"
    root, base = _repository(library, scratch / "repo", cache)
    plain = _plain(root, library)
    yield f"{library.name} {library.version}: plain pytest {plain:.1f} s"
    warm = _check(root, base, library.comment, "warm-up", cache)  # records the baseline
    yield f"  baseline (first check on the base) {warm.seconds:7.1f} s"
    targets = {"(a) comment": 0.25, "(b) one function": 1.5, "(c) imported by all": 3.0}
    edits = (library.comment, library.one_function, library.imported_by_all)
    for (label, target), edit in zip(targets.items(), edits, strict=True):
        done = _check(root, base, edit, label.split()[0].strip("()"), cache)
        ratio = done.seconds / plain
        mark = "met" if ratio <= target else "MISSED"
        yield (
            f"  {label:22s} {done.seconds:7.1f} s {ratio:6.2f}x (target {target}x, {mark}) "
            f"{done.verdict}, {_count(done.rerun)} run again, {done.kept} kept"
        )
    shutil.rmtree(cache / "oracle-gate" / "baselines", ignore_errors=True)
    runs = [
        _check(root, base, edit, f"ten-{index}", cache) for index, edit in enumerate(library.ten)
    ]
    recorded = sum(run.recorded for run in runs)
    first, rest = runs[0].seconds, [run.seconds for run in runs[1:]]
    yield (
        f"  (d) ten patches on one base {sum(r.seconds for r in runs):7.1f} s: first "
        f"{first:.1f} s (baseline recorded {recorded} time(s)), the other nine "
        f"{min(rest):.1f}-{max(rest):.1f} s, verdicts "
        f"{sorted({run.verdict for run in runs})}, run again {[_count(run.rerun) for run in runs]}"
    )


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="run.py replay", description=__doc__)
    parser.add_argument("--libraries", default=",".join(LIBRARIES))
    args = parser.parse_args(argv)
    print(f"replay bench at {commit_id()}")
    for name in args.libraries.split(","):
        with tempfile.TemporaryDirectory(prefix="oracle-gate-replay-", dir="/var/tmp") as scratch:
            for row in _bench(LIBRARIES[name], Path(scratch)):
                print(row, flush=True)
    return 0
