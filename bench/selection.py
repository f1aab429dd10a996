"""Selection benchmark: static package graph and selection vs ``bazel query rdeps``.

``python bench/run.py selection [--packages 20000,50000] [--seed 7] [--touched 5]``

For each size it generates a synthetic Bazel monorepo from a fixed seed
(py_library per package, ~40% of packages gated with ``oracle_gate(...)``,
dependencies drawn by preferential attachment so a few core libraries have
large fan-in and most packages have a handful of deps), commits it, then
commits a patch of ``--touched`` source files (one in a core library, one of
them a new module), and measures in one run, on the same tree:

- static graph, cold: ``load_graph`` of the parent commit with an empty parse cache;
- static graph, warm parse cache: the head commit read in full again;
- head graph derived from the parent's (``derive_graph``, what ``check`` and
  ``select`` do): for this diff, and for a modify-only diff;
- selection: ``classify`` + ``select``; cached selection: derive + classify + select;
- ``bazel query 'rdeps(//..., set(<touched>))'`` on the same tree, with a fresh
  server (start included), then again on the warm server.

Each oracle-gate stage has one warm-up and reports the median of ``--runs``;
Bazel runs once per column (a cold 50k-package query takes minutes). The bench
fails (exit 1) unless the package set Bazel reports equals the one selection
reached, and reports whether the targets hold: cached selection under 1 s, and
at least 10x faster than the cold Bazel query.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import oracle_gate
from common import commit_id, median_seconds
from oracle_gate import __version__, backend
from oracle_gate.bazel.read import cache_info, clear_cache
from oracle_gate.classify import classify
from oracle_gate.facts import gather_facts
from oracle_gate.graph import PackageGraph, derive_graph, load_graph
from oracle_gate.model import ChangeKind
from oracle_gate.repo.trees import GitTree
from oracle_gate.select import Selection, select

TOP_DIRS = ("libs", "services", "apps", "tools", "platform", "data")
STUB_DEFS = '''\
"""A stand-in for @oracle_gate//rules:defs.bzl with the same public API, for the bench."""

def invariant(**kwargs):
    return kwargs

def oracle_gate(name, rows = [], tests = [], fixtures = [], lock = None, seeds = None,
                freeze = None, owners = [], deps = [], **kwargs):
    native.filegroup(name = name, srcs = tests + fixtures + deps + [":lib"], **kwargs)
'''


# --- the synthetic monorepo ------------------------------------------------------------


def _package_dir(index: int) -> str:
    top = TOP_DIRS[index % len(TOP_DIRS)]
    return f"{top}/group{index // 40:04d}/pkg{index:06d}"


def generate(root: Path, packages: int, seed: int) -> list[str]:
    """Write the workspace under ``root/ws`` and a stub rules repo; return package dirs."""
    rng = random.Random(seed)
    stub = root / "stub"
    (stub / "rules").mkdir(parents=True)
    (stub / "WORKSPACE").write_text("")
    (stub / "rules" / "BUILD.bazel").write_text("")
    (stub / "rules" / "defs.bzl").write_text(STUB_DEFS)
    ws = root / "ws"
    ws.mkdir()
    (ws / "WORKSPACE").write_text('local_repository(name = "oracle_gate", path = "../stub")\n')
    dirs = [_package_dir(i) for i in range(packages)]
    gated = [rng.random() < 0.4 for _ in range(packages)]
    pool: list[int] = []  # each package once, plus once per dependent: preferential attachment
    for index, directory in enumerate(dirs):
        fan_out = min(index, min(25, int(rng.expovariate(1 / 3.0))))
        deps: set[int] = set()
        while len(deps) < fan_out:
            deps.add(rng.choice(pool) if pool and rng.random() < 0.8 else rng.randrange(index))
        pool.append(index)
        pool.extend(sorted(deps))
        _write_package(ws / directory, index, gated, deps, dirs, rng)
    return dirs


def _write_package(
    path: Path,
    index: int,
    gated: list[bool],
    dep_ids: set[int],
    dirs: list[str],
    rng: random.Random,
) -> None:
    deps = [dirs[d] for d in sorted(dep_ids)]
    (path / "src").mkdir(parents=True)
    for module in range(rng.randint(1, 3)):
        (path / "src" / f"mod_{module}.py").write_text(
            f"def f{module}(x):\n    return x + {index}\n"
        )
    labels = "".join(f'        "//{dep}:lib",\n' for dep in deps)
    build = [
        'load("@oracle_gate//rules:defs.bzl", "invariant", "oracle_gate")\n\n',
        "py_library(\n",
        '    name = "lib",\n',
        '    srcs = glob(["src/*.py"]),\n',
        f"    deps = [\n{labels}    ],\n",
        '    visibility = ["//visibility:public"],\n',
        ")\n",
    ]
    if gated[index]:
        (path / "tests").mkdir()
        (path / "tests" / "test_lib.py").write_text("def test_f():\n    assert True\n")
        (path / "testdata").mkdir()
        (path / "testdata" / "case.json").write_text(f'{{"n": {index}}}\n')
        gate_deps = "".join(
            f'        "//{dirs[d]}:oracle_gate",\n' for d in sorted(dep_ids) if gated[d]
        )
        build += [
            "\noracle_gate(\n",
            '    name = "oracle_gate",\n',
            "    rows = [\n",
            '        invariant(id = "contract", globs = ["src/*.py"],\n',
            '                  budget = {"examples": 20}),\n',
            '        invariant(id = "first_module", globs = ["src/mod_0.py"]),\n',
            "    ],\n",
            '    tests = glob(["tests/test_*.py"]),\n',
            '    fixtures = glob(["testdata/**"]),\n',
            f'    owners = ["@team-{index % 97}"],\n',
            f"    deps = [\n{gate_deps}    ],\n",
            ")\n",
        ]
    (path / "BUILD.bazel").write_text("".join(build))


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=1800, check=True
    )
    return done.stdout


def commit_patch(ws: Path, dirs: list[str], touched: int, seed: int) -> tuple[str, list[str]]:
    """Commit the tree as base, edit ``touched`` source files, commit; (base sha, paths)."""
    _git(ws, "init", "-q", "-b", "main")
    # No background gc: Bazel walks the workspace (.git too) while it runs.
    _git(ws, "config", "gc.auto", "0")
    _git(ws, "config", "maintenance.auto", "false")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "synthetic monorepo")
    base = _git(ws, "rev-parse", "HEAD").strip()
    rng = random.Random(seed + 1)
    # One core library (the oldest packages collect the most dependents) and the
    # rest anywhere, one of them a new module: a patch that ripples through part
    # of the repo and adds a path, so the head graph is derived, not reused.
    core = dirs[rng.randrange(min(10, len(dirs)))]
    others = rng.sample([d for d in dirs if d != core], max(0, touched - 1))
    paths = sorted(f"{d}/src/mod_0.py" for d in [core, *others[1:]])
    for path in paths:
        with open(ws / path, "a") as handle:
            handle.write("# edited by the bench\n")
    if others:
        added = f"{others[0]}/src/mod_new.py"
        (ws / added).write_text("def g(x):\n    return x\n")
        paths = sorted([*paths, added])
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "touch files")
    # A merge queue's clone holds its objects in a pack; 110,000 loose objects
    # (what two fresh commits leave) make every git read several times slower.
    _git(ws, "gc", "-q")
    return base, paths


# --- measuring ---------------------------------------------------------------------------


def _bazel(ws: Path, output_base: Path, *args: str, timeout: float) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(
        ["bazel", f"--output_base={output_base}", *args],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if "ERROR" in line] or [done.stderr]
        raise RuntimeError(f"bazel {' '.join(args[:1])} failed: {lines[0][:300]}")
    return elapsed, done.stdout


def _packages_of_labels(output: str) -> set[str]:
    found = set()
    for line in output.split():
        if line.startswith("//"):
            found.add(line[2:].split(":", 1)[0])
    return found


# Seconds a fresh `oracle-gate select` process may take, by size (issue 14).
FRESH_TARGETS = {20000: 1.5, 50000: 3.5}


def _fresh_select(ws: Path, base: str, head: str) -> None:
    """What a merge queue runs: a new process, nothing cached, the checkout's own code."""
    source = str(Path(oracle_gate.__file__).resolve().parent.parent)
    command = ["select", "--repo", str(ws), "--base", base, "--head", head]
    subprocess.run(
        [sys.executable, "-m", "oracle_gate", *command],
        cwd=ws,
        env={**os.environ, "PYTHONPATH": source},
        capture_output=True,
        timeout=600,
        check=True,
    )


def run_size(
    packages: int,
    seed: int,
    touched: int,
    runs: int,
    bazel: bool,
    timeout: float,
    keep: Path | None,
) -> bool:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f"og-bench-{packages}-", dir=keep))
    ws = root / "ws"
    try:
        start = time.perf_counter()
        dirs = generate(root, packages, seed)
        base, paths = commit_patch(ws, dirs, touched, seed)
        head = _git(ws, "rev-parse", "HEAD").strip()
        files = len(_git(ws, "ls-files").splitlines())
        gated = sum(1 for d in dirs if (ws / d / "tests").is_dir())
        print(
            f"\n== {packages} packages ({gated} gated), {files} files, {touched} touched; "
            f"generated and committed in {time.perf_counter() - start:.0f}s"
        )

        # The last cold run leaves the parse cache as a first load of base would.
        cold, parent_graph = median_seconds(
            runs, lambda: load_graph(GitTree(ws, base)), clear_cache
        )
        warm, _ = median_seconds(runs, lambda: load_graph(GitTree(ws, head)))
        hits = cache_info()
        facts = gather_facts(ws, base, head, datetime.date(2026, 11, 30))
        changes = facts.diff.changes

        def derived() -> PackageGraph:
            return derive_graph(parent_graph, GitTree(ws, head), changes)

        deriving, _ = median_seconds(runs, derived)
        modified = [c for c in changes if c.kind is ChangeKind.MODIFIED]
        reusing, _ = median_seconds(
            runs, lambda: derive_graph(parent_graph, GitTree(ws, head), modified)
        )

        def selection() -> Selection:
            return select(classify(facts), facts)

        selecting, chosen = median_seconds(runs, selection)

        def cached_selection() -> Selection:
            graph = derive_graph(parent_graph, GitTree(ws, head), changes)
            with_head = dataclasses.replace(facts, head_graph=graph)
            return select(classify(with_head), with_head)

        end_to_end, chosen2 = median_seconds(runs, cached_selection)
        assert chosen2 == chosen, "a derived head graph selected differently"
        full = select(
            classify(facts), dataclasses.replace(facts, head_graph=load_graph(GitTree(ws, head)))
        )
        assert full == chosen, "the derived head graph differs from a full re-read"

        fresh, _ = median_seconds(runs, lambda: _fresh_select(ws, base, head))
        rows = [
            (f"fresh `oracle-gate select` process ({backend.name()} backend)", fresh),
            ("static graph, cold (parent commit, empty parse cache)", cold),
            ("static graph, warm parse cache (head re-read in full)", warm),
            ("head graph derived from parent's (this diff: 1 path added)", deriving),
            ("head graph derived from parent's (a modify-only diff)", reusing),
            (f"{touched}-file selection (classify + select)", selecting),
            ("cached selection: derive + classify + select", end_to_end),
        ]
        ok = True
        equal_line = "bazel not run (--no-bazel)"
        if bazel:
            output_base = root / "bazel-output-base"
            labels = " ".join(
                f"//{p.rsplit('/src/', 1)[0]}:src/{p.rsplit('/src/', 1)[1]}" for p in paths
            )
            query = f"rdeps(//..., set({labels}))"
            try:
                _bazel(ws, output_base, "shutdown", timeout=120)
                cold_bazel, output = _bazel(
                    ws, output_base, "query", query, "--output=label", timeout=timeout
                )
                warm_bazel, _ = _bazel(
                    ws, output_base, "query", query, "--output=label", timeout=timeout
                )
            finally:
                subprocess.run(
                    ["bazel", f"--output_base={output_base}", "shutdown"],
                    cwd=ws,
                    capture_output=True,
                    timeout=120,
                    check=False,
                )
            rows += [
                ("bazel query rdeps, fresh server (start included)", cold_bazel),
                ("bazel query rdeps, warm server", warm_bazel),
            ]
            bazel_packages = _packages_of_labels(output)
            ours = set(chosen.affected)
            equal = bazel_packages == ours
            ok &= equal
            equal_line = (
                f"selected package set: static {len(ours)}, bazel {len(bazel_packages)}: "
                + (
                    "EQUAL"
                    if equal
                    else f"DIFFERENT (static only: {sorted(ours - bazel_packages)[:5]}, "
                    f"bazel only: {sorted(bazel_packages - ours)[:5]})"
                )
            )
        print(f"{'stage':<60} {'seconds':>10}")
        for name, seconds in rows:
            print(f"{name:<60} {seconds:>10.4f}")
        print(f"parse cache: {hits['hits']} hits, {hits['misses']} misses over the warm re-reads")
        print(
            f"selected: {len(chosen.packages)} gated packages, {len(chosen.rows)} rows, "
            f"{len(chosen.affected)} packages affected; {len(chosen.targets)} gate targets"
        )
        print(equal_line)
        under = end_to_end < 1.0
        print(
            "target: cached selection under 1 s: "
            f"{'met' if under else 'MISSED'} ({end_to_end:.3f}s)"
        )
        limit = FRESH_TARGETS.get(packages)
        if limit is not None:
            print(
                f"target: fresh select process under {limit} s: "
                f"{'met' if fresh <= limit else 'MISSED'} ({fresh:.2f}s)"
            )
        if bazel:
            print(
                f"target: fresh select process >= 2x faster than bazel query (warm server): "
                f"{'met' if warm_bazel >= 2 * fresh else 'MISSED'} ({warm_bazel / fresh:.1f}x)"
            )
            ratio = cold_bazel / end_to_end
            print(
                f"target: >= 10x faster than bazel query (fresh server): "
                f"{'met' if ratio >= 10 else 'MISSED'} ({ratio:.0f}x; "
                f"vs warm server {warm_bazel / end_to_end:.0f}x)"
            )
        return ok
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def _bazel_version() -> str:
    """``bazel --version``; Debian's build says ``no_version``, so ask dpkg for it then."""
    said = subprocess.run(
        ["bazel", "--version"], capture_output=True, text=True, timeout=60, check=False
    ).stdout.strip()
    if "no_version" in said and shutil.which("dpkg-query"):
        package = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", "bazel-bootstrap"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ).stdout.strip()
        return f"Debian bazel-bootstrap {package}" if package else said
    return said


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/run.py selection", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--packages", default="20000,50000", help="comma-separated sizes")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--touched", type=int, default=5, help="source files the patch edits")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per stage (median)")
    parser.add_argument("--no-bazel", action="store_true", help="skip the bazel query column")
    parser.add_argument("--bazel-timeout", type=float, default=3600.0)
    parser.add_argument("--keep", type=Path, help="generate under this directory and keep it")
    args = parser.parse_args(argv)
    bazel = not args.no_bazel
    if bazel and shutil.which("bazel") is None:
        print("bench selection: bazel is not on PATH; the bazel column is skipped")
        bazel = False
    version = ""
    if bazel:
        version = _bazel_version()
    print(
        f"selection bench: seed {args.seed}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, "
        f"oracle-gate {__version__} at {commit_id()}, {version or 'no bazel'}"
    )
    ok = True
    for size in (int(s) for s in args.packages.split(",") if s):
        ok &= run_size(
            size, args.seed, args.touched, args.runs, bazel, args.bazel_timeout, args.keep
        )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
