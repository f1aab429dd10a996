"""One command for every benchmark: ``python bench/run.py [NAME] [OPTIONS]``.

With no NAME every registered benchmark runs with its defaults; with a NAME,
the remaining options go to that benchmark (``python bench/run.py hashing --help``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

# Benchmark name -> module in bench/ that defines ``main(argv) -> int``.
BENCHES: dict[str, str] = {
    "hashing": "hashing",
    "history": "history",
    "replay": "replay",
    "scale": "scale",
    "selection": "selection",
    "split": "split",
    "surface": "surface",
    "vet": "vet",
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        print("benchmarks: " + ", ".join(sorted(BENCHES)))
        return 0
    if args and not args[0].startswith("-"):
        name, rest = args[0], args[1:]
        if name not in BENCHES:
            print(f"run.py: unknown benchmark {name!r}; choose from {sorted(BENCHES)}")
            return 2
        selected = [(name, rest)]
    else:
        selected = [(name, args) for name in BENCHES]
    status = 0
    for name, rest in selected:
        module = importlib.import_module(BENCHES[name])
        status = max(status, int(module.main(rest)))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
