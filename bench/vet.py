"""``python bench/run.py vet``: oracle-gate vet beside mutmut, in one run.

Two trees:

1. The example monorepo, vetted once per backend (``ORACLE_GATE_IMPL=python``
   and ``native``): the two JSON reports must be byte-identical.
2. more-itertools 10.5.0 (its sdist, downloaded from PyPI by this bench into the
   user cache, never committed) as one package of a temporary repository, with
   two rows of real properties over plain-data functions. ``vet`` judges the
   mutants of those functions; mutmut (from PyPI, in a virtual environment this
   bench makes in the same cache) judges its own mutants of the same functions
   with more-itertools' own test suite. Both wall times include everything each
   tool does for that set (generation, set-up runs, judging).

The table prints the mutants each judged, the per-row scores, both wall times
and their ratio. A wrong answer is a failure, not a result: the bench fails if
the backends disagree or a row fails on the unmutated tree.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from common import commit_id

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "python" / "oracle_gate" / "examples" / "monorepo"
MORE_ITERTOOLS = "more-itertools==10.5.0"
MUTMUT = "mutmut==3.8.1"
PYTEST = "pytest==8.3.3"
PACKAGE = "libs/more_itertools"
# row -> (file, functions, properties): plain-data functions only (docs/sandbox.md)
ROWS: dict[str, tuple[str, tuple[str, ...]]] = {
    "recipes": ("recipes.py", ("take", "nth", "all_equal", "polynomial_eval")),
    "more": ("more.py", ("minmax", "is_sorted", "ilen")),
}
PROPS = '''"""Properties of more-itertools: plain data in, plain data out."""

import more_itertools as mi
from hypothesis import strategies as st

_INTS = st.lists(st.integers(-5, 5), max_size=8)


def prop_take(sample):
    n, xs = sample
    assert mi.take(n, xs) == xs[:n]


def prop_nth(sample):
    xs, n = sample
    assert mi.nth(xs, n) == (xs[n] if n < len(xs) else None)


def prop_all_equal(xs):
    assert mi.all_equal(xs) == (len(set(xs)) <= 1)


def prop_polynomial_eval(sample):
    coefficients, x = sample
    n = len(coefficients)
    expected = sum(c * x ** (n - 1 - i) for i, c in enumerate(coefficients))
    assert mi.polynomial_eval(coefficients, x) == expected


def prop_minmax(xs):
    assert mi.minmax(xs) == (min(xs), max(xs))


def prop_is_sorted(xs):
    assert mi.is_sorted(xs) == (xs == sorted(xs))


def prop_ilen(xs):
    assert mi.ilen(xs) == len(xs)


prop_take.strategy = st.tuples(st.integers(0, 10), _INTS)
prop_nth.strategy = st.tuples(_INTS, st.integers(0, 10))
prop_all_equal.strategy = st.lists(st.integers(0, 2), max_size=5)
prop_polynomial_eval.strategy = st.tuples(_INTS, st.integers(-3, 3))
prop_minmax.strategy = st.lists(st.integers(-5, 5), min_size=1, max_size=8)
prop_is_sorted.strategy = st.lists(st.integers(0, 3), max_size=6)
prop_ilen.strategy = _INTS
'''


def _cache() -> Path:
    given = os.environ.get("XDG_CACHE_HOME", "")
    home = Path(given) if given and os.path.isabs(given) else Path.home() / ".cache"
    return home / "oracle-gate-bench"


def _run(command: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        list(command),
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"vet bench: {' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def _git_repo(path: Path) -> None:
    """One commit of everything, with a fixed identity and date: the same tree is the same
    commit on every run, so the children's hash seeds (drawn from it) are the same too."""
    quiet = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for who in ("AUTHOR", "COMMITTER"):
        quiet[f"GIT_{who}_DATE"] = "2026-01-01T00:00:00Z"
    for step in (["init", "-q", "-b", "main"], ["add", "-A"]):
        _run(["git", *step], path, quiet)
    identity = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    _run(["git", *identity, "commit", "-qm", "bench tree", "--no-verify"], path, quiet)


def _sdist(cache: Path) -> Path:
    """more-itertools' sdist, downloaded once into the cache."""
    target = cache / "sdist"
    found = sorted(target.glob("more_itertools-10.5.0.tar.gz")) + sorted(
        target.glob("more-itertools-10.5.0.tar.gz")
    )
    if not found:
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
        _run([*pip, "-d", str(target), MORE_ITERTOOLS], ROOT)
        found = sorted(target.glob("more*itertools-10.5.0.tar.gz"))
    return found[0]


def _mutmut(cache: Path) -> Path:
    """The mutmut executable of a virtual environment made once in the cache."""
    venv = cache / "mutmut-venv"
    executable = venv / "bin" / "mutmut"
    if not executable.exists():
        _run([sys.executable, "-m", "venv", str(venv)], ROOT)
        _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", MUTMUT, PYTEST], ROOT)
    return executable


def _unpacked(sdist: Path, into: Path) -> Path:
    with tarfile.open(sdist) as archive:
        archive.extractall(into, filter="data")
    return next(into.glob("more*itertools-10.5.0"))


def _vet(repo: Path, impl: str, *more: str) -> tuple[float, dict[str, object]]:
    env = {**os.environ, "ORACLE_GATE_IMPL": impl, "PYTHONPATH": str(ROOT / "python")}
    command = [sys.executable, "-m", "oracle_gate", "vet", "--repo", str(repo), "--format", "json"]
    start = time.perf_counter()
    out = _run([*command, *more], repo, env)
    return time.perf_counter() - start, json.loads(out)


def _native_built() -> bool:
    probe = [sys.executable, "-c", "import oracle_gate._native"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    done = subprocess.run(probe, env=env, capture_output=True, timeout=60, check=False)
    return done.returncode == 0


def _example(scratch: Path) -> list[str]:
    repo = scratch / "example"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    _git_repo(repo)
    seconds: dict[str, float] = {}
    reports: dict[str, dict[str, object]] = {}
    for impl in ("python", "native") if _native_built() else ("python",):
        seconds[impl], reports[impl] = _vet(repo, impl)
    if "native" in reports and reports["native"] != reports["python"]:
        raise SystemExit("vet bench: the backends gave different vet reports")
    same = "identical reports" if len(reports) == 2 else "native not built"
    lines = [f"example monorepo ({', '.join(sorted(seconds))} backends, {same}):"]
    lines += _rows(reports["python"])
    lines += [f"  wall time {impl}: {s:.1f} s" for impl, s in sorted(seconds.items())]
    return lines


def _rows(report: dict[str, object]) -> list[str]:
    rows = report["rows"]
    assert isinstance(rows, list)
    lines = []
    for row in rows:
        if row["status"] == "failing":
            raise SystemExit(f"vet bench: row {row['row']} fails on the unmutated tree")
        flag = "  DECORATIVE" if row["decorative"] else ""
        name = f"{row['package']}:{row['row']}"
        lines.append(f"  {name:<40} {row['score']:<14}{flag}")
    return lines


def _more_itertools(scratch: Path, cache: Path) -> list[str]:
    source = _unpacked(_sdist(cache), scratch / "sdist")
    repo = scratch / "mi"
    package = repo / PACKAGE
    shutil.copytree(source / "more_itertools", package / "more_itertools")
    (package / "props.py").write_text(PROPS)
    rows = []
    for row, (file, functions) in ROWS.items():
        props = ", ".join(f'"props.py:prop_{f}"' for f in functions)
        rows.append(
            f'  - id: {row}\n    globs: ["more_itertools/{file}"]\n'
            f"    properties: [{props}]\n    budget: {{examples: 50, seconds: 10}}\n"
        )
    (package / "invariants.yaml").write_text(
        'version: 1\nowners: ["@bench"]\ntests: []\nrows:\n' + "".join(rows)
    )
    _git_repo(repo)
    names = [f for _, functions in ROWS.values() for f in functions]
    flags = [part for name in names for part in ("--function", name)]
    vet_seconds, report = _vet(repo, "", "--per-function", "1000", *flags)
    vet_mutants = sum(len(row["mutants"]) for row in report["rows"])  # type: ignore[attr-defined]
    mutmut_seconds, outcomes = _run_mutmut(source, scratch / "mutmut", _mutmut(cache))
    judged = sum(outcomes.values())
    lines = [f"more-itertools 10.5.0, functions {', '.join(names)}:"]
    lines += _rows(report)
    lines.append(f"  oracle-gate vet: {vet_mutants} mutants judged in {vet_seconds:.1f} s")
    shown = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    lines.append(f"  mutmut 3.8.1:    {judged} mutants judged in {mutmut_seconds:.1f} s ({shown})")
    per_vet = vet_seconds / max(vet_mutants, 1)
    per_mutmut = mutmut_seconds / max(judged, 1)
    lines.append(
        f"  wall time ratio mutmut/vet: {mutmut_seconds / vet_seconds:.2f} "
        f"(per mutant: {per_mutmut / per_vet:.2f}; the goal is at least 10)"
    )
    return lines


_OUTCOME = re.compile(r"^(\S+) (more_itertools\.\S+__mutmut_\d+)$")
_MUTMUT_WORDS = {
    "🎉": "killed",
    "🙁": "survived",
    "⏰": "timeout",
    "🫥": "no tests",
    "🤔": "suspicious",
}


def _run_mutmut(source: Path, work: Path, mutmut: Path) -> tuple[float, Counter[str]]:
    shutil.copytree(source, work)
    with (work / "setup.cfg").open("a") as config:
        config.write(
            "\n[mutmut]\nsource_paths = more_itertools\n"
            "only_mutate =\n    more_itertools/recipes.py\n    more_itertools/more.py\n"
            "pytest_add_cli_args_test_selection = tests/\n"
        )
    _git_repo(work)
    patterns = [
        f"more_itertools.{file.removesuffix('.py')}.x_{name}__mutmut_*"
        for file, functions in ROWS.values()
        for name in functions
    ]
    start = time.perf_counter()
    out = _run([str(mutmut), "run", *patterns], work)
    seconds = time.perf_counter() - start
    outcomes: Counter[str] = Counter()
    for line in out.replace("\r", "\n").splitlines():
        found = _OUTCOME.match(line.strip())
        if found:
            outcomes[_MUTMUT_WORDS.get(found.group(1), found.group(1))] += 1
    return seconds, outcomes


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench/run.py vet", description=__doc__)
    parser.add_argument("--skip-example", action="store_true", help="only more-itertools")
    args = parser.parse_args(argv)
    cache = _cache()
    print(f"vet bench at {commit_id()} on {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="oracle-gate-vet-bench-", dir="/var/tmp") as root:
        scratch = Path(root)
        lines = [] if args.skip_example else _example(scratch)
        lines += _more_itertools(scratch, cache)
    print("\n".join(lines))
    return 0
