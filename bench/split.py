"""The cost of one question across the replay's process split: questions per second.

A test file makes N calls into production, N ``next()`` calls on a production
generator, and ``list()``s of production generators; pytest runs it once with
the code in its own process (what plain pytest costs) and once split (pytest in
the oracle child, production in a production child), both sandboxed as the
replay runs them, side by side in one run. Prints each run's time, the
questions the split run asked, and questions per second.

    python bench/run.py split [--calls N] [--runs R]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

from common import commit_id, median_seconds
from oracle_gate.runtime.sandbox import Runner, find_bwrap, library_paths

MODULE = "def ident(x):\n    return x\n\n\ndef count(n):\n    yield from range(n)\n"
TESTS = """import mod

N = {calls}


def test_calls():
    for i in range(N):
        assert mod.ident(i) == i


def test_next():
    items = mod.count(N)
    for i in range(N):
        assert next(items) == i


def test_list():
    for _ in range(N // 100):
        assert list(mod.count(100)) == list(range(100))
"""


def _project(root: Path, calls: int) -> None:
    (root / "tests").mkdir(parents=True)
    (root / "mod.py").write_text(MODULE)
    (root / "tests" / "test_mod.py").write_text(TESTS.format(calls=calls))


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="run.py split", description=__doc__)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="oracle-gate-split-", dir="/var/tmp") as scratch:
        root = Path(scratch)
        _project(root, args.calls)
        runner = Runner(library=library_paths(exclude=(root,)), bwrap=find_bwrap())
        files = ["tests/test_mod.py"]
        plain = {"role": "pytest", "files": files}
        split = {**plain, "role": "pytest_split", "test_side": files, "handles": True}

        def one_process() -> dict[str, object]:
            return runner.run(plain, root, import_paths=[root], checkout=root, timeout=600)

        def served() -> dict[str, object]:
            return runner.run_served(split, root, import_paths=[root], checkout=root, timeout=600)

        plain_seconds, plain_answer = median_seconds(args.runs, one_process)
        split_seconds, split_answer = median_seconds(args.runs, served)
    for answer in (plain_answer, split_answer):
        outcomes = answer["outcomes"]
        assert isinstance(outcomes, dict), answer
        assert all(str(o).startswith("passed") for o in outcomes.values()), answer
    questions = int(split_answer["questions"])  # type: ignore[call-overload]
    extra = split_seconds - plain_seconds
    print(f"split bench at {commit_id()} ({args.calls} calls, median of {args.runs}):")
    print(f"  one process  {plain_seconds:8.2f} s")
    print(f"  split        {split_seconds:8.2f} s   ({split_seconds / plain_seconds:.1f}x)")
    print(f"  questions    {questions:8d}   {questions / max(extra, 1e-9):,.0f} per second")
    return 0
