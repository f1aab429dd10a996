"""Real-history benchmark: the gate on real upstream commits of real libraries.

``python bench/run.py history [--library NAME]... [--commits N] [--git PATH --from REV]``

For each library (more-itertools, tomli, toolz) the bench sets up a gated
repository as a new user would: the library's tree at an older commit, then one
commit adding ``invariants.yaml`` at the root (a row over the library, its
tests locked), a ``props.py`` of a few real properties over plain-data APIs,
and ``oracle-gate lock --write``. It then applies the next ``--commits`` real
upstream commits in order, each as one commit of the gated branch (the
upstream tree, the gate's files kept), and checks each with ``oracle-gate check
--base <previous gated commit>``. After a reject it does what a human would:
it runs ``oracle-gate lock --write``, then ``oracle-gate note ... --reason`` for
every rejected path whose ``oracle-gate explain`` remedy is a human note, and
for the lock when the relock changed it; it commits and checks the branch
again. A reject that this does not resolve (a production path no row guards, a
replay regress, a replay time stop: the replay's budget is the parent's) is
merged over the gate (an override). Notes and overrides are counted.

Per commit it prints the verdict, the lane and rule of each reject, the
check's time and the time of a plain ``python -m pytest -q`` on the same
commit, side by side; when what still rejects (after the human's note, if
any) comes from the trusted replay alone, it also runs ``check --no-replay``
and prints that verdict. The summary counts
rejects by rule and human notes per 50 commits.

Where the history comes from (no network but the package index):

- by default, each library's consecutive releases on PyPI, one commit per
  release, from its sdists (``pip download --no-deps --no-binary :all:``, kept
  in ``--cache``, default ``$XDG_CACHE_HOME/oracle-gate-bench/history``). Files
  the sdist build generates and the repository does not hold (``PKG-INFO``,
  ``*.egg-info/``, the ``[egg_info]`` section setuptools appends to
  ``setup.cfg``, the ``setup.py`` flit or poetry writes) are left out. Which files an
  sdist holds changes between releases (tomli 1.0.2's held its whole repository,
  1.0.3's did not), so some changes are the packaging's, not the code's.
- ``--git PATH --from REV`` (one ``--library``): the first-parent commits after
  ``REV`` of a local clone or bare repository, up to ``--to`` (default its
  ``HEAD``); the bench only reads that history.

``--json FILE`` writes every step as JSON; ``--keep DIR`` keeps the gated
repositories there; ``--no-replay`` checks every commit without the trusted
replay (the static lanes and the rows: minutes instead of an hour). The
figures and their judgement: docs/history.md.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from common import commit_id
from oracle_gate.model import ORACLE_LANES

LOCK = "oracle_gate.lock"
# The gate's files the bench adds; every upstream commit is applied around them.
GATE_FILES = (
    "invariants.yaml",
    "oracle-gate.toml",
    "props.py",
    LOCK,
    "ORACLE_CHANGELOG.md",
)
CHECK_TIMEOUT = 3600
STEP_TIMEOUT = 1800
IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


@dataclasses.dataclass(frozen=True)
class Library:
    """A library the bench gates: its releases, its matrix and its properties."""

    name: str
    releases: str  # consecutive PyPI releases, oldest first, separated by spaces
    matrix: str  # invariants.yaml at the repository root
    props: str  # props.py beside it
    # the root settings' tooling globs: the library's build and release helpers, which
    # neither ship nor run in its tests (docs/classification.md, rule 6)
    tooling: tuple[str, ...] = ()


MORE_ITERTOOLS = Library(
    name="more-itertools",
    releases="10.0.0 10.1.0 10.2.0 10.3.0 10.4.0 10.5.0 10.6.0 10.7.0 10.8.0"
    " 11.0.0 11.0.1 11.0.2 11.1.0 11.2.0",
    matrix="""\
version: 1
owners: ["@maintainers"]
tests: ["tests/**/test_*.py"]
rows:
  - id: more_itertools
    globs: ["more_itertools/**"]
    properties: ["props.py:prop_take", "props.py:prop_minmax", "props.py:prop_ilen"]
    budget: {examples: 100, seconds: 20}
""",
    # chunked() and most of the library return iterators, which cannot cross to a
    # property: these call functions that return plain data.
    props="""\
from hypothesis import strategies as st

from more_itertools import ilen, minmax, take


def prop_take(sample):
    items, n = sample
    assert take(n, items) == items[:n]


prop_take.strategy = st.tuples(st.lists(st.integers()), st.integers(0, 10))


def prop_minmax(items):
    assert tuple(minmax(items)) == (min(items), max(items))


prop_minmax.strategy = st.lists(st.integers(), min_size=1)


def prop_ilen(items):
    assert ilen(items) == len(items)


prop_ilen.strategy = st.lists(st.integers())
""",
    tooling=("docs/conf.py",),
)

TOMLI = Library(
    name="tomli",
    releases="1.0.0 1.0.1 1.0.2 1.0.3 1.0.4 1.1.0 1.2.0 1.2.1 1.2.2 1.2.3"
    " 2.0.0 2.0.1 2.0.2 2.1.0 2.2.1 2.3.0",
    matrix="""\
version: 1
owners: ["@maintainers"]
tests: ["tests/**/test_*.py"]
rows:
  - id: tomli
    globs: ["tomli/**", "src/tomli/**"]
    properties: ["props.py:prop_integers", "props.py:prop_strings", "props.py:prop_duplicate_key"]
    budget: {examples: 100, seconds: 20}
""",
    props="""\
import json

from hypothesis import strategies as st

try:
    from tomli import TOMLDecodeError, loads
except ImportError:
    # src/tomli since 2.0.1: the gate puts the package directory (the root) on
    # sys.path, not src/, and src/tomli imports as a namespace package's module.
    from src.tomli import TOMLDecodeError, loads

KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


def prop_integers(table):
    assert loads("".join(f"{key} = {value}\\n" for key, value in table.items())) == table


prop_integers.strategy = st.dictionaries(KEYS, st.integers(-(10**9), 10**9))


def prop_strings(table):
    # A JSON string of BMP characters without surrogates is a TOML basic string.
    text = "".join(f"{key} = {json.dumps(value)}\\n" for key, value in table.items())
    assert loads(text) == table


prop_strings.strategy = st.dictionaries(
    KEYS, st.text(st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)))
)


def prop_duplicate_key(key):
    try:
        loads(f"{key} = 1\\n{key} = 2\\n")
    except TOMLDecodeError:
        return
    raise AssertionError("a key defined twice was accepted")


prop_duplicate_key.strategy = KEYS
""",
    tooling=("benchmark/**",),
)

TOOLZ = Library(
    name="toolz",
    releases="0.10.0 0.11.0 0.11.1 0.11.2 0.12.0 0.12.1 1.0.0 1.1.0 1.2.0",
    matrix="""\
version: 1
owners: ["@maintainers"]
tests: ["toolz/tests/test_*.py"]
rows:
  - id: toolz
    globs: ["toolz/**", "tlz/**"]
    properties: ["props.py:prop_frequencies", "props.py:prop_groupby", "props.py:prop_merge",
                 "props.py:prop_topk"]
    budget: {examples: 100, seconds: 20}
""",
    # A key that is not callable is an index (toolz.getter): no function crosses.
    props="""\
from collections import Counter

from hypothesis import strategies as st

from toolz import frequencies, groupby, merge, topk


def prop_frequencies(items):
    assert frequencies(items) == dict(Counter(items))


prop_frequencies.strategy = st.lists(st.integers(0, 5))


def prop_groupby(pairs):
    expected = {}
    for pair in pairs:
        expected.setdefault(pair[0], []).append(pair)
    assert groupby(0, pairs) == expected


prop_groupby.strategy = st.lists(st.tuples(st.integers(0, 3), st.integers()))


def prop_merge(dicts):
    first, second = dicts
    assert merge(first, second) == {**first, **second}


SMALL_DICTS = st.dictionaries(st.integers(0, 5), st.integers())
prop_merge.strategy = st.tuples(SMALL_DICTS, SMALL_DICTS)


def prop_topk(sample):
    k, items = sample
    assert list(topk(k, items)) == sorted(items, reverse=True)[:k]


prop_topk.strategy = st.tuples(st.integers(1, 5), st.lists(st.integers()))
""",
    tooling=("versioneer.py",),
)

LIBRARIES = {library.name: library for library in (TOMLI, TOOLZ, MORE_ITERTOOLS)}


# --- running commands ----------------------------------------------------------------


def run(
    argv: Sequence[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def git(cwd: Path, *args: str) -> str:
    """Run git, raising with its stderr on failure; return its stdout, stripped."""
    done = run(["git", *args], cwd, env={**os.environ, **IDENTITY})
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout.strip()


def gate_env(human: bool) -> dict[str, str]:
    env = {**os.environ, **IDENTITY}
    if human:
        # The bench plays the human who notes and relocks: those commands refuse to
        # run for an agent or in CI, and these steps are neither.
        env.pop("CI", None)
        env.pop("ORACLE_GATE_ROLE", None)
    return env


def gate(
    cwd: Path, *args: str, human: bool = False, timeout: float = STEP_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """``oracle-gate ARGS`` with the interpreter and oracle_gate this bench imports."""
    return run([sys.executable, "-m", "oracle_gate", *args], cwd, gate_env(human), timeout)


# --- where the history comes from ------------------------------------------------------


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "oracle-gate-bench" / "history"


def sdist(library: Library, version: str, cache: Path) -> Path:
    """The release's sdist, downloaded once into ``cache`` by pip."""
    folder = cache / "sdists"
    prefix = library.name.replace("-", "_")
    for found in sorted(folder.glob("*.tar.gz")):
        name = found.name.lower().replace("-", "_")
        if name == f"{prefix}_{version}.tar.gz":
            return found
    folder.mkdir(parents=True, exist_ok=True)
    done = run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "-d", str(folder), f"{library.name}=={version}"],
        folder,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"pip download {library.name}=={version}: {done.stderr.strip()}")
    return sdist(library, version, cache)


EGG_INFO_SECTION = re.compile(r"\n*\[egg_info\]\ntag_build = \ntag_date = 0\n*\Z")


def generated(path: Path) -> bool:
    """Whether ``path``, at the top of an sdist, is written by the sdist build and is not
    in the repository: ``PKG-INFO``, ``*.egg-info/``, the ``setup.py`` of flit or poetry."""
    if path.name == "PKG-INFO" or path.name.endswith(".egg-info"):
        return True
    if path.name != "setup.py":
        return False
    text = path.read_text(errors="replace")
    return "generated by flit" in text[:200] or "setup(**setup_kwargs)" in text


def unpack_release(archive: Path, into: Path) -> None:
    """Replace ``into``'s files (not ``.git``) by the sdist's, less what the build generated."""
    for child in into.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    with tempfile.TemporaryDirectory() as scratch, tarfile.open(archive) as tar:
        tar.extractall(scratch, filter="data")
        (top,) = Path(scratch).iterdir()
        for child in top.iterdir():
            if not generated(child):
                shutil.move(str(child), into / child.name)
    setup_cfg = into / "setup.cfg"
    if setup_cfg.is_file():
        text = EGG_INFO_SECTION.sub("\n", setup_cfg.read_text())
        if text.strip():
            setup_cfg.write_text(text)
        else:
            setup_cfg.unlink()


def sdist_history(library: Library, cache: Path, count: int, repo: Path) -> list[str]:
    """Make ``repo`` a git repository with one commit per release, the first ``count + 1``
    releases; return its commits. Only the sdists are cached: the history is rebuilt."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for version in library.releases.split()[: count + 1]:
        unpack_release(sdist(library, version, cache), repo)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"{library.name} {version}")
    return git(repo, "rev-list", "--reverse", "main").split()


def git_history(path: Path, start: str, end: str, count: int) -> list[str]:
    """``start`` and the first ``count`` first-parent commits after it, up to ``end``."""
    first = git(path, "rev-parse", "--verify", f"{start}^{{commit}}")
    after = git(path, "rev-list", "--first-parent", "--reverse", f"{first}..{end}").split()
    if not after:
        raise RuntimeError(f"{path}: no commits after {start} up to {end}")
    return [first, *after[:count]]


# --- the gated repository ----------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Reject:
    lane: str
    path: str
    rule: str
    reason: str
    replay: bool  # the finding comes from the trusted replay


@dataclasses.dataclass(frozen=True)
class Checked:
    verdict: str  # merge, reject or error
    seconds: float
    rejects: tuple[Reject, ...]
    error: str


@dataclasses.dataclass
class Step:
    index: int
    upstream: str
    subject: str
    files: int
    check: Checked
    pytest_seconds: float
    pytest_summary: str
    # The verdict of --no-replay on the last check (after the human's note, if any),
    # run when only the replay rejected it.
    no_replay: str = ""
    noted: list[str] = dataclasses.field(default_factory=list)
    recheck: Checked | None = None
    human: str = ""  # "", "noted", "override"


# A reject's rule: its reason with the parts that name one case (paths, counts,
# units, quotes) taken out, cut at its first clause.
_VARYING = re.compile(r"`[^`]*`|'[^']*'|\"[^\"]*\"|\S+::\S+|\S+/\S+|\d+(\.\d+)?s?")


def rule_of(lane: str, reason: str) -> str:
    head = re.split(r"[:;(]| with no human note", reason, maxsplit=1)[0]
    return f"{lane}: {' '.join(_VARYING.sub('_', head).split())}"


def check(repo: Path, base: str, head: str, replay: bool = True) -> Checked:
    args = ["check", "--base", base, "--head", head, "--format", "json"]
    start = time.perf_counter()
    done = gate(repo, *args, *([] if replay else ["--no-replay"]), timeout=CHECK_TIMEOUT)
    seconds = time.perf_counter() - start
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return Checked("error", seconds, (), (done.stderr.strip() or done.stdout)[-400:])
    if report.get("verdict") == "error":
        return Checked("error", seconds, (), report["error"]["text"])
    rejects = tuple(
        Reject(
            finding["lane"],
            finding["path"],
            rule_of(finding["lane"], finding["reason"]),
            finding["reason"],
            finding["reason"].startswith("replay"),
        )
        for finding in report["findings"]
        if finding["verdict"] == "reject"
    )
    return Checked(report["verdict"], seconds, rejects, "")


def plain_pytest(repo: Path) -> tuple[float, str]:
    """Seconds and closing line of ``python -m pytest -q`` in the gated working tree."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)  # the library's own tests need nothing of the gate's
    if (repo / "src").is_dir():
        env["PYTHONPATH"] = "src"
    start = time.perf_counter()
    done = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], repo, env, STEP_TIMEOUT
    )
    seconds = time.perf_counter() - start
    git(repo, "clean", "-fdxq")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return seconds, (lines[-1].strip("= ") if lines else f"exit {done.returncode}")


def set_up(repo: Path, upstream: Path, start: str, library: Library) -> str:
    """The gated repository at ``start``, gated as a new user would; its gate commit."""
    git(repo, "init", "-q", "-b", "main")
    git(repo, "fetch", "-q", "--no-tags", str(upstream), "+refs/*:refs/upstream/*")
    git(repo, "read-tree", "--reset", "-u", start)
    git(repo, "commit", "-q", "-C", start)
    (repo / "invariants.yaml").write_text(library.matrix)
    (repo / "props.py").write_text(library.props)
    if library.tooling:
        globs = ", ".join(f'"{glob}"' for glob in library.tooling)
        (repo / "oracle-gate.toml").write_text(f"tooling = [{globs}]\n")
    human(repo, "lock", "--write", ".")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"oracle-gate: gate {library.name}")
    return git(repo, "rev-parse", "HEAD")


def human(repo: Path, *args: str) -> str:
    done = gate(repo, *args, human=True)
    if done.returncode != 0:
        raise RuntimeError(f"oracle-gate {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def apply(repo: Path, commit: str) -> int:
    """Commit ``commit``'s tree on the gated branch, the gate's files kept; files changed."""
    kept = [path for path in GATE_FILES if (repo / path).exists()]
    git(repo, "read-tree", "--reset", "-u", commit)
    git(repo, "checkout", "HEAD", "--", *kept)
    git(repo, "commit", "-q", "--allow-empty", "-C", commit)
    return len(git(repo, "diff", "--name-only", "HEAD~1", "HEAD").splitlines())


def note_remedies(rejects: Sequence[Reject]) -> list[str]:
    """The rejected paths a human note resolves: oracle moves the static lanes found.

    This is the remedy ``oracle-gate explain`` prints (a note for a path of an
    oracle lane, a relock and a note for a lock), decided from the report instead
    of one ``explain`` per path, which costs a check each. A replay reject is not a
    moved oracle: a note cannot make a test pass.
    """
    oracle_lanes = {lane.value for lane in ORACLE_LANES}
    return sorted(
        {reject.path for reject in rejects if reject.lane in oracle_lanes and not reject.replay}
    )


def resolve(repo: Path, base: str, step: Step, replay: bool) -> None:
    """What a human does after a reject: relock, note the moved oracle paths, commit,
    and check again; what that does not resolve is merged over the gate."""
    step.noted = note_remedies(step.check.rejects)
    # Relock first, as explain's remedy for a lock says, and note the lock when that
    # changed it: new test units enter the lock as oracle, and a note records the
    # digest of the lock as it is committed.
    human(repo, "lock", "--write", ".")
    if git(repo, "status", "--porcelain", "--", LOCK) and LOCK not in step.noted:
        step.noted.append(LOCK)
    if step.noted:
        reason = f"upstream {step.upstream[:10]} ({step.subject}): reviewed oracle change"
        human(repo, "note", *step.noted, "--reason", reason)
    git(repo, "add", "-A")
    if not git(repo, "status", "--porcelain"):
        step.human = "override"
        return
    git(repo, "commit", "-q", "-m", f"oracle-gate: human note for {step.upstream[:10]}")
    step.recheck = check(repo, base, "HEAD", replay)
    step.human = "noted" if step.recheck.verdict == "merge" else "override"


def walk(
    repo: Path, library: Library, commits: Sequence[str], upstream: Path, replay: bool
) -> list[Step]:
    """Gate ``commits[0]``, then apply and check every later commit in order."""
    base = set_up(repo, upstream, commits[0], library)
    steps = []
    for index, commit in enumerate(commits[1:], 1):
        files = apply(repo, commit)
        head = git(repo, "rev-parse", "HEAD")
        step = Step(
            index=index,
            upstream=commit,
            subject=git(repo, "log", "-1", "--format=%s", commit)[:60],
            files=files,
            check=check(repo, base, head, replay),
            pytest_seconds=0.0,
            pytest_summary="",
        )
        step.pytest_seconds, step.pytest_summary = plain_pytest(repo)
        if step.check.verdict != "merge":
            resolve(repo, base, step, replay)
        last = step.recheck or step.check
        if replay and last.rejects and all(reject.replay for reject in last.rejects):
            step.no_replay = check(repo, base, "HEAD", replay=False).verdict
        print_step(step)
        steps.append(step)
        base = git(repo, "rev-parse", "HEAD")
    return steps


# --- output --------------------------------------------------------------------


def print_rejects(rejects: Sequence[Reject], label: str) -> None:
    by_rule: dict[str, list[str]] = collections.defaultdict(list)
    for reject in rejects:
        by_rule[reject.rule].append(reject.path)
    for rule, paths in sorted(by_rule.items()):
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        print(f"       {label} {rule}: {', '.join(paths[:3])}{more}")


def print_step(step: Step) -> None:
    checked = step.check
    ratio = checked.seconds / step.pytest_seconds if step.pytest_seconds else 0.0
    extra = f"  --no-replay: {step.no_replay}" if step.no_replay else ""
    print(
        f"{step.index:4} {step.upstream[:10]}  {checked.verdict:6} {checked.seconds:8.1f}"
        f" {step.pytest_seconds:8.1f} {ratio:6.1f}x  {step.files:3}  {step.subject}{extra}",
        flush=True,
    )
    for failed in (checked, step.recheck):
        if failed and failed.error:
            print(f"       error: {failed.error}")
    print_rejects(checked.rejects, "reject")
    if step.human:
        again = step.recheck
        after = f", check again: {again.verdict} in {again.seconds:.1f}s" if again else ""
        print(f"       human: {step.human}; noted {len(step.noted)} path(s){after}")
        if again:
            print_rejects(again.rejects, "  still")


def summarize(name: str, source: str, steps: Sequence[Step]) -> None:
    count = len(steps)
    verdicts = collections.Counter(step.check.verdict for step in steps)
    by_rule = collections.Counter(reject.rule for step in steps for reject in step.check.rejects)
    notes = sum(1 for step in steps if step.noted)
    overrides = sum(1 for step in steps if step.human == "override")
    check_seconds = sum(step.check.seconds for step in steps)
    pytest_seconds = sum(step.pytest_seconds for step in steps)
    human_seconds = sum(step.recheck.seconds for step in steps if step.recheck)
    print(f"\n{name} ({source}): {count} commit(s)")
    print(
        f"  verdicts: {verdicts['merge']} merge, {verdicts['reject']} reject, "
        f"{verdicts['error']} gate error"
    )
    print("  rejects by rule:")
    for rule, hits in sorted(by_rule.items(), key=lambda item: (-item[1], item[0])):
        commits = sum(1 for step in steps if any(r.rule == rule for r in step.check.rejects))
        print(f"    {hits:4} in {commits:3} commit(s)  {rule}")
    per_50 = 50 * notes / count if count else 0.0
    print(
        f"  human notes: {notes} ({per_50:.1f} per 50 commits), "
        f"{sum(len(step.noted) for step in steps)} path(s) noted; overrides: {overrides}"
    )
    disagree = [step.upstream[:10] for step in steps if step.no_replay == "merge"]
    print(f"  rejected by the replay alone, merged by --no-replay: {disagree or 'none'}")
    ratio = check_seconds / pytest_seconds if pytest_seconds else 0.0
    print(
        f"  time: check {check_seconds:.0f} s, plain pytest {pytest_seconds:.0f} s "
        f"({ratio:.1f}x); checks after notes {human_seconds:.0f} s"
    )


# --- the command ---------------------------------------------------------------


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run.py history",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--library",
        action="append",
        choices=sorted(LIBRARIES),
        help="a library to gate (repeatable; default: all from their sdists)",
    )
    parser.add_argument("--commits", type=int, default=3, help="commits per library (default 3)")
    parser.add_argument("--git", type=Path, help="a local clone with the library's history")
    parser.add_argument("--from", dest="start", help="with --git: the commit to gate first")
    parser.add_argument("--to", default="HEAD", help="with --git: the last commit (default HEAD)")
    parser.add_argument("--cache", type=Path, default=default_cache(), help="sdists and histories")
    parser.add_argument("--keep", type=Path, help="keep the gated repositories in this directory")
    parser.add_argument("--json", type=Path, help="also write every step to this file")
    parser.add_argument(
        "--no-replay",
        action="store_true",
        help="check every commit with --no-replay: the static lanes and the rows alone",
    )
    args = parser.parse_args(argv)
    if args.git and (not args.start or not args.library or len(args.library) != 1):
        parser.error("--git needs --from REV and exactly one --library")
    if args.commits < 1:
        parser.error("--commits must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    libraries = [LIBRARIES[name] for name in args.library or LIBRARIES]
    print(
        f"real-history bench: oracle-gate at {commit_id()}, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}, {args.commits} commit(s) per library"
        f"{', check --no-replay' if args.no_replay else ''}"
    )
    results = {}
    with tempfile.TemporaryDirectory(prefix="oracle-gate-history-") as scratch:
        for library in libraries:
            if args.git:
                upstream = args.git.resolve()
                commits = git_history(upstream, args.start, args.to, args.commits)
                source = f"git {upstream} from {args.start}"
            else:
                upstream = Path(scratch) / f"{library.name}-releases"
                commits = sdist_history(library, args.cache, args.commits, upstream)
                versions = library.releases.split()
                source = f"PyPI sdists {versions[0]}..{versions[len(commits) - 1]}"
            repo = (args.keep or Path(scratch)) / library.name
            if repo.exists():
                shutil.rmtree(repo)
            repo.mkdir(parents=True)
            print(f"\n{library.name}: {source}")
            print(f"{'#':>4} {'upstream':10}  {'verdict':6} {'check s':>8} {'pytest s':>8}"
                  f" {'ratio':>7}  {'files':>3}  subject")  # fmt: skip
            steps = walk(repo, library, commits, upstream, not args.no_replay)
            summarize(library.name, source, steps)
            results[library.name] = {"source": source, "steps": steps}
    if args.json:
        args.json.write_text(json.dumps(results, default=dataclasses.asdict, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
