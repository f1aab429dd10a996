"""What the oracle_gate_python repository rule records about an interpreter.

Run as ``python -I -B probe_python.py``, exactly as the gate's launcher runs
Python (isolated: no user site, no PYTHON* variables). Prints one JSON object:
the interpreter, its version, its import path, the site directories whose
``.pth`` files it read, and for each distribution the gate imports (and
everything they require) its version, where its modules are imported from,
the dist-info directory, and a digest of every file it installed. A ``.pth``
that shadows a module shows as a different origin; one that is added or
removed changes the ``.pth`` list.

Standard library only: it runs before anything is known about the interpreter.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import site
import sys

# The gate's own distribution and what its driver imports (pyproject.toml).
ROOTS = ("oracle-gate", "pyyaml", "blake3", "hypothesis", "rich", "coverage", "tomli")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(dist: importlib.metadata.Distribution) -> list[str]:
    """Names of the requirements that hold without extras (markers other than extra are kept)."""
    names = []
    for requirement in dist.requires or []:
        if "extra ==" in requirement.replace("extra==", "extra =="):
            continue
        found = _NAME.match(requirement.strip())
        if found:
            names.append(found.group(0))
    return names


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    except OSError as error:
        return f"unreadable: {error.strerror}"
    return digest.hexdigest()


def _distribution(dist: importlib.metadata.Distribution) -> dict[str, object]:
    files = sorted(
        str(file.locate())
        for file in dist.files or []
        if "__pycache__" not in file.parts and not str(file).endswith(".pyc")
    )
    total = hashlib.sha256()
    for path in files:
        total.update(f"{path}\0{_file_digest(path)}\n".encode())
    top_level = set()
    for file in dist.files or []:
        if len(file.parts) > 1:
            top_level.add(file.parts[0])
        elif file.suffix == ".py":
            top_level.add(file.stem)
    modules = {}
    for name in sorted(top_level):
        if name.endswith((".dist-info", ".egg-info", ".data")) or name in ("..", "__pycache__"):
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        modules[name] = spec.origin if spec is not None else None
    info_dir = getattr(dist, "_path", None)
    return {
        "version": dist.version,
        "dist_info": str(info_dir) if info_dir is not None else None,
        "modules": modules,
        "files": len(files),
        "digest": total.hexdigest(),
    }


def _closure() -> dict[str, dict[str, object]]:
    found: dict[str, dict[str, object]] = {}
    pending = list(ROOTS)
    while pending:
        name = _normal(pending.pop())
        if name in found:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = {"version": None}
            continue
        found[name] = _distribution(dist)
        pending.extend(_requirements(dist))
    return dict(sorted(found.items()))


def _pth_files(directories: list[str]) -> dict[str, str]:
    found = {}
    for directory in directories:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            if name.endswith(".pth"):
                path = os.path.join(directory, name)
                found[path] = _file_digest(path)
    return found


def main() -> None:
    site_dirs = [path for path in site.getsitepackages() if os.path.isdir(path)]
    record = {
        "interpreter": sys.executable,
        "binary": os.path.realpath(sys.executable),
        "version": sys.version,
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "prefix": sys.prefix,
        "sys_path": sys.path,
        "site_dirs": site_dirs,
        "pth_files": _pth_files(site_dirs),
        "distributions": _closure(),
    }
    json.dump(record, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
