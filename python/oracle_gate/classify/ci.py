"""CI files, and the job that runs oracle-gate: the only CI that can move a verdict.

The gate runs the tests itself, with its own interpreter and its own pytest
invocation, so a CI file changes what CI does, not what the gate measures,
except where it runs the gate: removing or weakening that step is an oracle move.
A job runs the gate when its text says ``oracle-gate`` (or ``oracle_gate``), or
when a file it names does (``make gate``, ``./ci/gate.sh``, a reusable workflow);
the jobs it ``needs`` run before it and count too. What such a job reads
(``pip install -r requirements/gate.txt``, ``python-version-file: .python-version``,
``pip install .``) builds the environment the gate runs in, so those files are
harness as well. Everything else in CI (another job's action versions or Python
matrix, a workflow that never runs the gate) is not.
"""

from __future__ import annotations

import fnmatch
import functools
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import yaml

from oracle_gate.classify.sections import Effect
from oracle_gate.repo.trees import GitTree

__all__ = ["ci_effect", "gate_input_of", "is_ci_file", "mentions_gate"]

_GATE_WORDS = (b"oracle-gate", b"oracle_gate")
WORKFLOWS = ".github/workflows/"
_CI_DIRS = (WORKFLOWS, ".github/actions/", ".ci/", ".circleci/", ".buildkite/", ".gitlab/")
_CI_NAMES = frozenset(
    {
        ".gitlab-ci.yml",
        ".travis.yml",
        "azure-pipelines.yml",
        "bitbucket-pipelines.yml",
        "Jenkinsfile",
        "Makefile",
        "makefile",
        "GNUmakefile",
    }
)
_YAML_SUFFIXES = (".yml", ".yaml")
# A workflow's top-level keys that only label it; every other one (on, env,
# permissions, concurrency, defaults) shapes how its jobs run.
_LABELS = frozenset({"name", "run-name"})
# Shell words and YAML values are split on these to find the paths a job names.
_SEPARATORS = re.compile(r"[\s;|&()<>'\"=,`]+")
# A command that reads a file by convention, from the directory it runs in.
_COMMAND_FILES = {
    "make": ("Makefile", "makefile", "GNUmakefile"),
    "tox": ("tox.ini", "tox.toml", "setup.cfg", "pyproject.toml"),
    "nox": ("noxfile.py",),
}
# What installing, using or running commands in a directory reads: a Python project, a
# composite action, the files make, tox and nox read there (``make -C DIR gate``).
_DIRECTORY_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "action.yml",
    "action.yaml",
    *_COMMAND_FILES["make"],
    "tox.ini",
    "noxfile.py",
)


def is_ci_file(path: str) -> bool:
    """Whether ``path`` configures a CI system or is a CI script (a Makefile included)."""
    return path.startswith(_CI_DIRS) or posixpath.basename(path) in _CI_NAMES


def mentions_gate(texts: Iterable[str | bytes]) -> bool:
    """Whether any text names oracle-gate."""
    for text in texts:
        data = text.encode() if isinstance(text, str) else text
        if any(word in data for word in _GATE_WORDS):
            return True
    return False


def _parse(path: str, text: bytes) -> tuple[bool, Any]:
    """(parsed, document): YAML files as YAML, any other CI file as its text."""
    if not path.endswith(_YAML_SUFFIXES):
        return True, text
    try:
        return True, yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return False, None


def _strings(node: Any) -> Iterator[str]:
    """Every string in a parsed document, keys included."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, bytes):
        yield node.decode("utf-8", "replace")
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(key)
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def _bases(node: Any) -> list[str]:
    """The directories a job's commands run in: the root, and each ``working-directory``."""
    found = [""]
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "working-directory" and isinstance(value, str):
                found.append(posixpath.normpath(value.removeprefix("./")).strip("/."))
            found += _bases(value)[1:]
    elif isinstance(node, list):
        for item in node:
            found += _bases(item)[1:]
    return found


def _candidates(token: str, bases: list[str]) -> Iterator[str]:
    token = token.strip()
    while token.startswith("./"):
        token = token[2:]
    token = token.rstrip("/")
    if not token or token.startswith(("-", "$", "/")) or ".." in token.split("/"):
        return
    for base in bases:
        joined = posixpath.normpath(posixpath.join(base, token)) if base else token
        yield "" if joined == "." else joined


class _Reader:
    """The files of one tree that jobs name, found by their words."""

    def __init__(self, tree: GitTree) -> None:
        self.tree = tree

    @functools.cached_property
    def files(self) -> tuple[str, ...]:
        return self.tree.files()

    def named(self, node: Any) -> set[str]:
        """The tree's files a job names: paths, directories it installs or uses, files its
        commands read by convention (``make``: the Makefile), shell globs."""
        bases = _bases(node)
        found: set[str] = set()
        for text in _strings(node):
            for token in _SEPARATORS.split(text):
                found |= self._token_files(token, bases)
        return found

    def _token_files(self, token: str, bases: list[str]) -> set[str]:
        tree = self.tree
        found: set[str] = set()
        for base in bases:
            for name in _COMMAND_FILES.get(token, ()):
                found.add(posixpath.join(base, name) if base else name)
        for candidate in _candidates(token, bases):
            if "*" in candidate or "?" in candidate:
                found.update(p for p in self.files if fnmatch.fnmatchcase(p, candidate))
            elif candidate and tree.blob_id(candidate) is not None:
                found.add(candidate)
            elif candidate == "" or tree.has_directory(candidate):
                found.update(
                    posixpath.join(candidate, n) if candidate else n for n in _DIRECTORY_FILES
                )
        return {path for path in found if tree.blob_id(path) is not None}

    def runs_gate(self, node: Any) -> bool:
        """Whether a job (a parsed node, or a script's text) runs oracle-gate: it says so, or
        a file it names does."""
        if mentions_gate(_strings(node)):
            return True
        named = sorted(self.named(node))
        return mentions_gate(self.tree.read_many(named).values())


def _jobs(document: Any) -> Mapping[str, Any]:
    jobs = document.get("jobs") if isinstance(document, dict) else None
    return jobs if isinstance(jobs, dict) else {}


def _needs(job: Any) -> list[str]:
    needs = job.get("needs", []) if isinstance(job, dict) else []
    return [needs] if isinstance(needs, str) else [n for n in needs if isinstance(n, str)]


def _gate_jobs(document: Any, reader: _Reader) -> set[str]:
    """The ids of a workflow's jobs that run the gate, and of the jobs they need."""
    jobs = _jobs(document)
    pending = [job_id for job_id, job in jobs.items() if reader.runs_gate(job)]
    found: set[str] = set()
    while pending:
        job_id = pending.pop()
        if job_id not in found:
            found.add(job_id)
            pending += _needs(jobs.get(job_id))
    return found


@functools.lru_cache(maxsize=8)
def _gate_inputs(tree: GitTree) -> dict[str, str]:
    """Every file of ``tree`` that a job running the gate reads -> the CI file of that job."""
    reader = _Reader(tree)
    inputs: dict[str, str] = {}
    ci_files = sorted(path for path in tree.paths() if is_ci_file(path))
    for path, text in sorted(tree.read_many(ci_files).items()):
        parsed, document = _parse(path, text)
        if not parsed:
            continue
        if path.startswith(WORKFLOWS):
            jobs = _jobs(document)
            nodes = [jobs[job_id] for job_id in sorted(_gate_jobs(document, reader))]
        else:
            nodes = [document] if reader.runs_gate(document) else []
        for node in nodes:
            for named in sorted(reader.named(node) - {path}):
                inputs.setdefault(named, path)
    return inputs


def gate_input_of(path: str, parent: GitTree, head: GitTree) -> str | None:
    """The CI file whose gate-running job reads ``path``, in the parent or the head."""
    return _gate_inputs(parent).get(path) or _gate_inputs(head).get(path)


def _workflow_effect(old: Any, new: Any, parent: GitTree, head: GitTree) -> Effect:
    gate = _gate_jobs(old, _Reader(parent)) | _gate_jobs(new, _Reader(head))
    if not gate:
        return Effect(False, "no job of this workflow runs oracle-gate, in the parent or the head")
    before = old if isinstance(old, dict) else {}
    after = new if isinstance(new, dict) else {}
    keys = (before.keys() | after.keys()) - _LABELS - {"jobs"}
    # YAML 1.1 reads the key ``on`` as the boolean True
    moved = ["on" if key is True else str(key) for key in keys if before.get(key) != after.get(key)]
    moved += [f"job {job}" for job in sorted(gate) if _jobs(old).get(job) != _jobs(new).get(job)]
    if moved:
        return Effect(True, f"the part that runs oracle-gate changed ({', '.join(sorted(moved))})")
    return Effect(False, "only jobs that do not run oracle-gate changed")


def ci_effect(
    path: str, before: bytes | None, after: bytes | None, parent: GitTree, head: GitTree
) -> Effect:
    """What a CI file's change can do to the gate.

    Harness: a change to a workflow's job that runs oracle-gate (or that such a
    job needs), to the workflow's triggers, environment or permissions, or to any
    other CI file or script that runs the gate on either side; a YAML file that
    does not parse. Not harness: anything else, such as another job's action
    versions or Python matrix, or a workflow that never runs the gate.
    """
    old_parsed, old = _parse(path, before) if before is not None else (True, None)
    new_parsed, new = _parse(path, after) if after is not None else (True, None)
    if not (old_parsed and new_parsed):
        return Effect(True, f"{posixpath.basename(path)} does not parse as YAML: judged as a whole")
    if path.startswith(WORKFLOWS):
        return _workflow_effect(old, new, parent, head)
    runs = _Reader(parent).runs_gate(old) or _Reader(head).runs_gate(new)
    if not runs:
        return Effect(False, "runs no oracle-gate, in the parent or the head")
    if old == new:
        return Effect(False, "the file that runs oracle-gate changed only in comments or layout")
    return Effect(True, "runs oracle-gate, and changed")
