"""Fuzzing the gate's inputs: every malformed file gives 0, 1 or 2, one line, quickly and small.

Hypothesis mutates one input file at a time (the matrix, the lock, each ledger,
the changelog, CODEOWNERS, a BUILD file, the merge-group event file), commits
it on top of a trusted parent and runs ``oracle-gate check`` in a child
process. Each variant must exit 0, 1 or 2; on 2 print exactly one
``oracle-gate: error:`` line and no traceback; finish within 10 s; and stay
under 1 GiB of resident memory.

The default run is small enough for CI; ``ORACLE_GATE_FUZZ_EXAMPLES=N`` runs
N variants, and ``ORACLE_GATE_FUZZ_REPORT=FILE`` appends one JSON line per
variant (file, exit code, seconds, peak RSS) for a summary.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitrepo import GitRepo, run_measured

PKG = "libs/codec"
EVENT = "<merge_group event>"
INPUTS = (
    f"{PKG}/invariants.yaml",
    f"{PKG}/oracle_gate.lock",
    f"{PKG}/seeds.jsonl",
    f"{PKG}/flake_freeze.yaml",
    f"{PKG}/assumptions.yaml",
    f"{PKG}/ORACLE_CHANGELOG.md",
    f"{PKG}/BUILD.bazel",
    "CODEOWNERS",
    EVENT,
)
EXAMPLES = int(os.environ.get("ORACLE_GATE_FUZZ_EXAMPLES", "3"))
LIMIT_SECONDS = 10.0
LIMIT_KIB = 1024 * 1024
# Pieces that broke readers before (issue 16), spliced into the files.
ALIAS_BOMB = b"a0: &a0 [x, x, x, x, x, x, x, x]\n" + b"".join(
    b"a%d: &a%d [%s]\n" % (level, level, b", ".join([b"*a%d" % (level - 1)] * 8))
    for level in range(1, 9)
)
NASTY = (
    ALIAS_BOMB,
    b"[" * 5000,
    b"{" * 5000,
    b"\x00\x1b\xff\xfe",
    b"expires: 2027-02-30\n",
    b'"fixtures": {}, "fixtures": {},',
    b"budget: 1\nbudget: 2\n",
    b"version: 9\n",
    b'{"row": 5, "prop": "p", "input": 1, "expect": "hold"}\n',
    b"- id: A1\n- id: A1\n",
    b"oracle_gate(name = 'g', rows = [invariant(id = 'x')])\n",
    b"9" * 5000,
    b"\n" * 3 + b"  \t- :\n",
)


@pytest.fixture(scope="module")
def fuzz_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GitRepo, str]]:
    """The codec package, a BUILD file, an assumption register and a freeze, committed."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        for who in ("AUTHOR", "COMMITTER"):
            patch.setenv(f"GIT_{who}_NAME", "t")
            patch.setenv(f"GIT_{who}_EMAIL", "t@example.com")
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        repo = GitRepo.init(tmp_path_factory.mktemp("fuzz") / "repo")
        repo.commit_example(PKG)
        repo.replace(
            f"{PKG}/invariants.yaml", "{examples: 50, seconds: 10}", "{examples: 5, seconds: 1}"
        )
        repo.write("CODEOWNERS", "/libs/codec/ @codec-team\n")
        repo.write(
            f"{PKG}/BUILD.bazel", 'py_library(name = "codec", srcs = glob(["codec/*.py"]))\n'
        )
        repo.write(f"{PKG}/flake_freeze.yaml", "frozen: []\nbudget: 1\n")
        repo.write(
            f"{PKG}/assumptions.yaml",
            "version: 1\nitems:\n  - id: A1\n    symbol: codec.encode\n    status: rejected\n",
        )
        repo.relock(PKG)
        base = repo.commit("trusted parent")
        yield repo, base


def _original(repo: GitRepo, base: str, name: str) -> bytes:
    if name == EVENT:
        return json.dumps({"merge_group": {"base_sha": base, "head_sha": "HEAD"}}).encode()
    return repo.git("show", f"{base}:{name}").encode()


@st.composite
def _variant(draw: st.DrawFn) -> tuple[str, int, bytes, int]:
    """(file, mutation kind, bytes to splice in, position as a fraction of 10,000)."""
    name = draw(st.sampled_from(INPUTS))
    kind = draw(st.integers(0, 3))
    piece = draw(st.one_of(st.sampled_from(NASTY), st.binary(max_size=40)))
    return name, kind, piece, draw(st.integers(0, 10_000))


def _mutate(original: bytes, kind: int, piece: bytes, where: int) -> bytes:
    at = len(original) * where // 10_000
    if kind == 0:  # insert
        return original[:at] + piece + original[at:]
    if kind == 1:  # overwrite
        return original[:at] + piece + original[at + len(piece) :]
    if kind == 2:  # truncate, then append
        return original[:at] + piece
    return piece * max(1, 2000 // max(1, len(piece)))  # replace with a repeated piece


def _run(repo: GitRepo, base: str, name: str, text: bytes) -> tuple[int, str, float, int]:
    repo.git("checkout", "-q", "-f", "--detach", base)
    repo.git("clean", "-q", "-fdx")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_MERGE"))}
    args = ["check", "--repo", str(repo.path)]
    if name == EVENT:
        event = repo.path.parent / "event.json"
        event.write_bytes(text)
        env.update(GITHUB_EVENT_NAME="merge_group", GITHUB_EVENT_PATH=str(event))
        repo.write("README.md", "a docs patch\n")
    else:
        repo.write(name, text)
        args += ["--base", base]
    repo.git("add", "-A")
    repo.git("commit", "-q", "--no-verify", "-m", f"fuzz {name}")
    started = time.monotonic()
    done, peak_kib = run_measured(*args, env=env, timeout=LIMIT_SECONDS * 3)
    return done.returncode, done.stderr, time.monotonic() - started, peak_kib


def _report(record: dict[str, object]) -> None:
    target = os.environ.get("ORACLE_GATE_FUZZ_REPORT")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(variant=_variant())
def test_every_malformed_input_fails_closed_in_bounded_time_and_memory(
    fuzz_repo: tuple[GitRepo, str], variant: tuple[str, int, bytes, int]
) -> None:
    repo, base = fuzz_repo
    name, kind, piece, where = variant
    text = _mutate(_original(repo, base, name), kind, piece, where)
    code, stderr, seconds, peak = _run(repo, base, name, text)
    _report({"file": name, "exit": code, "seconds": round(seconds, 2), "peak_kib": peak})
    assert code in (0, 1, 2), stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    if code == 2:
        lines = [
            line for line in stderr.splitlines() if not line.startswith("oracle-gate: warning:")
        ]
        assert len(lines) == 1 and lines[0].startswith("oracle-gate: error: "), stderr
    assert seconds < LIMIT_SECONDS, f"{name}: {seconds:.1f}s"
    assert peak < LIMIT_KIB, f"{name}: {peak} KiB"


def test_the_fuzz_harness_itself_sees_a_bad_file(fuzz_repo: tuple[GitRepo, str]) -> None:
    repo, base = fuzz_repo
    code, stderr, _, peak = _run(repo, base, f"{PKG}/flake_freeze.yaml", b"budget: [\n")
    assert code == 2 and stderr.startswith(f"oracle-gate: error: {PKG}/flake_freeze.yaml:")
    assert 0 < peak < LIMIT_KIB
