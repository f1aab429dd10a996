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
from collections.abc import Iterable, Iterator
from typing import Any

import yaml

from oracle_gate.classify.sections import Effect
from oracle_gate.repo.trees import GitTree

__all__ = ["ci_effect", "gate_input_of", "is_ci_file", "load_yaml", "mentions_gate"]

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
_GITLAB_CI = ".gitlab-ci.yml"
# GitLab's global keywords: every other top-level mapping is a job.
_GITLAB_GLOBAL = frozenset(
    {"default", "include", "stages", "variables", "workflow", "image", "services", "cache",
     "before_script", "after_script"}
)  # fmt: skip
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


class _Loader(yaml.SafeLoader):
    """Safe YAML that reads a CI system's own tags (GitLab's ``!reference [.setup, script]``)
    as the plain value they tag, instead of refusing the file."""


def _tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    del suffix
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]


_Loader.add_multi_constructor("!", _tagged)


def load_yaml(text: bytes) -> tuple[bool, Any]:
    """(parsed, document) of a YAML text; (False, None) when it is not YAML."""
    try:
        return True, yaml.load(text, Loader=_Loader)  # a SafeLoader: no Python object is ever built
    except (yaml.YAMLError, RecursionError, ValueError):
        return False, None


def _parse(path: str, text: bytes) -> tuple[bool, Any]:
    """(parsed, document): YAML files as YAML, any other CI file as its text."""
    return load_yaml(text) if path.endswith(_YAML_SUFFIXES) else (True, text)


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


def _jobs(path: str, document: Any) -> dict[str, Any] | None:
    """The jobs of a CI file whose jobs the gate tells apart, by id; None for any other file,
    which is judged as one whole. GitHub: ``jobs``; GitLab: every top-level mapping but its
    global keywords (hidden ``.jobs`` included: other jobs extend them)."""
    if not isinstance(document, dict):
        return {} if path.startswith(WORKFLOWS) or _is_gitlab(path) else None
    if path.startswith(WORKFLOWS):
        jobs = document.get("jobs")
        return dict(jobs) if isinstance(jobs, dict) else {}
    if _is_gitlab(path):
        return {
            key: value
            for key, value in document.items()
            if isinstance(key, str) and key not in _GITLAB_GLOBAL and isinstance(value, dict)
        }
    return None


def _is_gitlab(path: str) -> bool:
    return posixpath.basename(path) == _GITLAB_CI


def _settings(path: str, document: Any) -> dict[object, Any]:
    """What of a CI file with jobs is not a job, but its labels: the triggers, environment,
    permissions and defaults every job runs with (GitHub), the global keywords (GitLab)."""
    if not isinstance(document, dict):
        return {}
    jobs = _jobs(path, document) or {}
    skip = {"jobs", *_LABELS} if path.startswith(WORKFLOWS) else set(jobs)
    return {key: value for key, value in document.items() if key not in skip}


def _gate_jobs(path: str, document: Any, reader: _Reader) -> set[str]:
    """The ids of the jobs that run the gate, and of every job they name (``needs``,
    ``extends``, a ``!reference``): those run before them or become part of them."""
    jobs = _jobs(path, document) or {}
    pending = [job_id for job_id, job in jobs.items() if reader.runs_gate(job)]
    found: set[str] = set()
    while pending:
        job_id = pending.pop()
        if job_id not in found:
            found.add(job_id)
            pending += [name for name in _strings(jobs.get(job_id)) if name in jobs]
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
        jobs = _jobs(path, document)
        if jobs is None:
            nodes = [document] if reader.runs_gate(document) else []
        else:
            gate = sorted(_gate_jobs(path, document, reader))
            nodes = [jobs[job_id] for job_id in gate]
            if gate or reader.runs_gate(_settings(path, document)):
                nodes.append(_settings(path, document))
        for node in nodes:
            for named in sorted(reader.named(node) - {path}):
                inputs.setdefault(named, path)
    return inputs


def gate_input_of(path: str, parent: GitTree, head: GitTree) -> str | None:
    """The CI file whose gate-running job reads ``path``, in the parent or the head."""
    return _gate_inputs(parent).get(path) or _gate_inputs(head).get(path)


def _jobs_effect(path: str, old: Any, new: Any, parent: GitTree, head: GitTree) -> Effect:
    readers = (_Reader(parent), _Reader(head))
    gate = _gate_jobs(path, old, readers[0]) | _gate_jobs(path, new, readers[1])
    settings = (_settings(path, old), _settings(path, new))
    # a global ``include`` of a file that runs the gate makes the globals the gate's
    included = any(reader.runs_gate(part) for reader, part in zip(readers, settings, strict=True))
    if not gate and not included:
        return Effect(False, "no job of this file runs oracle-gate, in the parent or the head")
    before, after = settings
    # YAML 1.1 reads the key ``on`` as the boolean True
    moved = ["on" if k is True else str(k) for k in before.keys() | after.keys()
             if before.get(k) != after.get(k)]  # fmt: skip
    old_jobs, new_jobs = _jobs(path, old) or {}, _jobs(path, new) or {}
    moved += [f"job {job}" for job in sorted(gate) if old_jobs.get(job) != new_jobs.get(job)]
    if moved:
        return Effect(True, f"the part that runs oracle-gate changed ({', '.join(sorted(moved))})")
    return Effect(False, "only jobs that do not run oracle-gate changed")


def ci_effect(
    path: str, before: bytes | None, after: bytes | None, parent: GitTree, head: GitTree
) -> Effect:
    """What a CI file's change can do to the gate.

    Harness: in a GitHub workflow or a GitLab CI file, a change to a job that runs
    oracle-gate (or to a job it names: needs, extends), or to what every job runs
    with (GitHub's triggers, environment, permissions; GitLab's global keywords);
    in any other CI file or script, any change where it runs the gate on either
    side; a YAML file that does not parse. Not harness: anything else, such as
    another job's action versions or Python matrix, or a file that never runs
    the gate.
    """
    old_parsed, old = _parse(path, before) if before is not None else (True, None)
    new_parsed, new = _parse(path, after) if after is not None else (True, None)
    if not (old_parsed and new_parsed):
        return Effect(True, f"{posixpath.basename(path)} does not parse as YAML: judged as a whole")
    if _jobs(path, old if old is not None else new) is not None:
        return _jobs_effect(path, old, new, parent, head)
    runs = _Reader(parent).runs_gate(old) or _Reader(head).runs_gate(new)
    if not runs:
        return Effect(False, "runs no oracle-gate, in the parent or the head")
    if old == new:
        return Effect(False, "the file that runs oracle-gate changed only in comments or layout")
    return Effect(True, "runs oracle-gate, and changed")
