"""The trusted replay's baseline: the parent's tests on the parent's code, once per parent.

A package's baseline is every parent test's outcome and footprint
(``runtime/footprint.py``) in one run of pytest with the parent's code in one
sandboxed child: the parent's code is trusted, so it needs no split. It is
content-addressed by what it depends on (``key_material``): this record's
format and the gate's own code, the interpreter and the distributions the
children import from, whether bubblewrap runs them, and every file of the
package, of its dependencies and of the test side above it, by blob id. A
test may read files elsewhere in the repository: the entry lists them with
their blob ids (``outside``), and is used only for a parent that has the same.

Entries live in the gate's user cache and, with ``--cache-url``, in a shared
HTTP cache (WebDAV ``PUT``/``GET``). An entry is verified before use: its key
is recomputed from the parent's git objects, its recorded material and
outside files must match, and its digest must hold (keyed with
``ORACLE_GATE_CACHE_SECRET`` when that is set, so only machines holding the
secret can write entries the gate accepts). Anything else, a corrupt or
forged entry included, is a miss: the baseline is computed again, never
taken on trust.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blake3 import blake3

from oracle_gate.repo.cache import cache_home
from oracle_gate.repo.trees import GitTree
from oracle_gate.runtime.impact import Footprint, entries

__all__ = ["Baseline", "BaselineCache", "Recorded", "files_digest", "key_material"]

# Bump when what a baseline holds, or how it is recorded, changes meaning.
FORMAT = 2
_MAX_ENTRY = 256 * 1024 * 1024
_HTTP_TIMEOUT = 20.0
_SECRET = "ORACLE_GATE_CACHE_SECRET"
# The gate's own code that records a baseline: a change to any of it is another baseline.
_RECORDING_CODE = ("child.py", "footprint.py", "proxy.py", "canonical.py", "frames.py")


@dataclass(frozen=True)
class Recorded:
    """What the baseline run answered: outcomes and the footprints, as the child encodes
    them (``[first, last]`` line runs), and how long it took."""

    outcomes: Mapping[str, str]
    footprints: Mapping[str, Any]
    seconds: float


@dataclass(frozen=True)
class Baseline:
    """A package's baseline, decoded: outcome and footprint (session included) per test."""

    recorded: Recorded
    session: Footprint
    tests: Mapping[str, Footprint]
    cached: bool = False  # taken from a cache, not recorded by this check

    @classmethod
    def of(cls, recorded: Recorded, cached: bool = False) -> Baseline:
        session = Footprint.decode(recorded.footprints["session"])
        tests = {
            str(nodeid): Footprint.decode(data).with_session(session)
            for nodeid, data in recorded.footprints["tests"].items()
        }
        return cls(recorded, session, tests, cached)

    def footprint(self, nodeid: str) -> Footprint:
        """The test's footprint; a test the recorder never saw (a test pytest reported
        without running, or a file that did not collect) has an unrecorded one."""
        return self.tests.get(nodeid) or Footprint(unrecorded="no footprint was recorded")

    def touched(self) -> set[str]:
        """Every path some footprint names: files run, opened, shown, directories listed."""
        found: set[str] = set()
        for footprint in (self.session, *self.tests.values()):
            found.update(footprint.lines, footprint.opened, footprint.listed, footprint.rendered)
        return found


def _gate_code() -> str:
    here = Path(__file__).parent
    digest = blake3()
    for name in _RECORDING_CODE:
        digest.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
    return digest.hexdigest()


def _distributions(library: Sequence[str]) -> list[list[str]]:
    found = {
        (str(dist.metadata["Name"] or ""), str(dist.version))
        for dist in importlib.metadata.distributions(path=list(library))
    }
    return [list(item) for item in sorted(found)]


def key_material(
    parent: GitTree,
    roots: Sequence[str],
    above: Iterable[str],
    library: Sequence[str],
    sandboxed: bool,
) -> dict[str, Any]:
    """What a package's baseline depends on, from the parent's git objects and this
    machine: ``roots`` are the package's and its dependencies' directories, ``above`` the
    harness files above the package."""
    prefixes = [f"{root}/" if root else "" for root in roots]
    files = sorted(
        {path for path in parent.files() if any(path.startswith(p) for p in prefixes)}
        | {path for path in above if parent.blob_id(path) is not None}
    )
    return {
        "format": FORMAT,
        "gate": _gate_code(),
        "python": [sys.version, os.path.realpath(sys.executable), platform.platform()],
        "distributions": _distributions(library),
        "sandboxed": sandboxed,
        "roots": sorted(roots),
        "files": files_digest(parent, files),
    }


def files_digest(parent: GitTree, files: Iterable[str]) -> str:
    """One digest of ``files`` (paths) and their blob ids in ``parent`` (none: missing)."""
    listed = sorted(files)
    ids = parent.blob_ids(listed)
    return blake3("".join(f"{path}\0{ids.get(path, '')}\n" for path in listed).encode()).hexdigest()


def _key(material: Mapping[str, Any]) -> str:
    return blake3(json.dumps(material, sort_keys=True).encode()).hexdigest()


def _outside(parent: GitTree, paths: Iterable[str], roots: Sequence[str]) -> dict[str, str]:
    """The state in ``parent`` of every path outside ``roots`` a footprint names: a file's
    blob id, a directory's entries' digest, ``-`` for nothing there."""
    prefixes = [f"{root}/" if root else "" for root in roots]
    wanted = sorted(p for p in paths if not any(p.startswith(x) or p + "/" == x for x in prefixes))
    if not wanted:
        return {}
    names = entries(parent.files())
    state = {}
    for path in wanted:
        blob = parent.blob_id(path)
        if blob is not None:
            state[path] = blob
        elif path in names:
            below = sorted(n for n in names if n.rpartition("/")[0] == path)
            state[path] = "dir " + blake3("\n".join(below).encode()).hexdigest()
        else:
            state[path] = "-"
    return state


def _body(entry: Mapping[str, Any]) -> bytes:
    return json.dumps({k: v for k, v in entry.items() if k != "seal"}, sort_keys=True).encode()


def _seal(body: bytes) -> str:
    secret = os.environ.get(_SECRET, "")
    if secret:
        return "keyed " + blake3(body, key=blake3(secret.encode()).digest()).hexdigest()
    return "plain " + blake3(body).hexdigest()


@dataclass
class BaselineCache:
    """Where baselines are kept: the user cache and, optionally, a shared HTTP cache.

    ``notes`` collects one line per cache problem (a miss for a reason, a failed
    write): a cache never decides a verdict, so its faults are reported, not raised.
    """

    local: Path | None = field(default_factory=lambda: cache_home() / "oracle-gate" / "baselines")
    url: str | None = None
    notes: list[str] = field(default_factory=list)

    def load(
        self, parent: GitTree, material: Mapping[str, Any], roots: Sequence[str]
    ) -> Baseline | None:
        """The verified baseline for ``material`` on ``parent``, or None."""
        key = _key(material)
        for where, data in self._sources(key):
            why = ""
            try:
                entry = json.loads(data)
                why = _invalid(entry, key, material)
                if not why and _outside(parent, entry["outside"], roots) != entry["outside"]:
                    continue  # recorded on a parent whose other files differ: not this one's
                if not why:
                    recorded = Recorded(entry["outcomes"], entry["footprints"], entry["seconds"])
                    return Baseline.of(recorded, cached=True)
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                why = f"it does not decode ({type(error).__name__})"
            self.notes.append(f"baseline cache entry {key[:12]} in {where} ignored: {why}")
        return None

    def _sources(self, key: str) -> list[tuple[str, bytes]]:
        found = []
        if self.local is not None:
            path = self.local / f"{key}.json"
            with contextlib.suppress(OSError):
                if path.stat().st_size <= _MAX_ENTRY:
                    found.append(("the user cache", path.read_bytes()))
        if self.url is not None and not found:
            data = self._get(key)
            if data is not None:
                found.append((self.url, data))
        return found

    def _get(self, key: str) -> bytes | None:
        try:
            with urllib.request.urlopen(self._address(key), timeout=_HTTP_TIMEOUT) as answer:
                data: bytes = answer.read(_MAX_ENTRY + 1)
        except urllib.error.HTTPError as error:
            if error.code != 404:
                self.notes.append(f"shared cache {self.url}: GET answered {error.code}")
            return None
        except (OSError, ValueError) as error:
            self.notes.append(f"shared cache {self.url} unreachable: {error}")
            return None
        return data if len(data) <= _MAX_ENTRY else None

    def _address(self, key: str) -> str:
        assert self.url is not None
        return f"{self.url.rstrip('/')}/oracle-gate/baselines/{key}.json"

    def store(
        self,
        parent: GitTree,
        material: Mapping[str, Any],
        roots: Sequence[str],
        baseline: Baseline,
    ) -> None:
        """Keep ``baseline`` in every cache; a cache that cannot take it is noted."""
        key = _key(material)
        recorded = baseline.recorded
        entry: dict[str, Any] = {
            "key": key,
            "material": dict(material),
            "outside": _outside(parent, baseline.touched(), roots),
            "outcomes": dict(recorded.outcomes),
            "footprints": dict(recorded.footprints),
            "seconds": recorded.seconds,
        }
        entry["seal"] = _seal(_body(entry))
        data = json.dumps(entry, sort_keys=True).encode()
        if self.local is not None:
            self._write_local(key, data)
        if self.url is not None:
            self._put(key, data)

    def _write_local(self, key: str, data: bytes) -> None:
        assert self.local is not None
        temporary = None
        try:
            self.local.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.local, prefix=".baseline-")
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, self.local / f"{key}.json")
        except OSError as error:
            self.notes.append(f"baseline not kept in the user cache ({error.strerror or error})")
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)

    def _put(self, key: str, data: bytes) -> None:
        request = urllib.request.Request(
            self._address(key),
            data=data,
            method="PUT",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=_HTTP_TIMEOUT):
                pass
        except (OSError, ValueError) as error:
            self.notes.append(f"baseline not kept in the shared cache {self.url}: {error}")


def _invalid(entry: Any, key: str, material: Mapping[str, Any]) -> str:
    """Why a cache entry cannot stand for ``material``, or ``""``."""
    if not isinstance(entry, dict) or not isinstance(entry.get("seal"), str):
        return "it is not a sealed baseline"
    if entry.get("key") != key or entry.get("material") != dict(material):
        return "it was recorded for other inputs"
    if entry["seal"] != _seal(_body(entry)):
        keyed = entry["seal"].startswith("keyed ")
        return "its seal does not match" + (
            "" if keyed or not os.environ.get(_SECRET) else (f" (unkeyed, and {_SECRET} is set)")
        )
    if not isinstance(entry.get("outside"), dict) or not isinstance(entry.get("outcomes"), dict):
        return "it is not a baseline"
    return ""
