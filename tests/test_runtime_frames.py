"""Property runs whose verdict production code cannot forge.

The property body and Hypothesis run in an oracle child that never imports the
package's code; a production child serves each call over framed requests. Each
cheating patch below rejected the old single-child run's verdict or passed it;
every one is noted in the package's changelog, so the static tamper lane says
``human_noted`` and only the runtime decides.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gitrepo import GitRepo
from oracle_gate.errors import ConfigError
from oracle_gate.model import Verdict
from oracle_gate.report import Report
from oracle_gate.runtime import sandbox

PROPS = """\
from hypothesis import strategies as st
from mod import double


def prop_double(x):
    assert double(x) == x + x


prop_double.strategy = st.integers()
"""
HONEST = "def double(x):\n    return 2 * x\n"
WRONG = "def double(x):\n    return 3 * x\n"


def _package(repo: GitRepo, props: str = PROPS, code: str = HONEST) -> str:
    """pkg/ with one property row over ``mod.py`` (and anything under ``lib/``)."""
    repo.write(
        "pkg/invariants.yaml",
        'version: 1\nrows:\n  - id: r\n    globs: ["mod.py", "hypothesis/*.py"]\n'
        '    properties: ["props.py:prop_double"]\n    budget: {examples: 30, seconds: 5}\n',
    )
    repo.write("pkg/mod.py", code)
    repo.write("pkg/props.py", props)
    repo.write("oracle-gate.toml", "timeout-floor = 5\n")
    repo.relock("pkg")
    return repo.commit("package")


def _noted_patch(repo: GitRepo, base: str, files: dict[str, str]) -> Report:
    """The patch, with every file it touches noted, so the tamper lane never decides."""
    for path, text in files.items():
        repo.write(f"pkg/{path}", text)
    repo.note("pkg", base, *files)
    return repo.gate(base, repo.commit("patch"))


def _property(report: Report) -> list[tuple[Verdict, str]]:
    return [(f.verdict, f.reason) for f in report.findings if f.path == "pkg/props.py"]


def _static(report: Report) -> set[Verdict]:
    """The verdicts of the path lanes on the patched production file."""
    return {f.verdict for f in report.findings if f.path == "pkg/mod.py"}


# Finds the result pipe the way code under test could (every open fd), writes a
# well-formed answer that says the property holds, and leaves before the real one.
FORGE_HOLD = """\
import json, os, struct


def double(x):
    frame = json.dumps(
        {"results": [{"seeds": [], "search": {"status": "hold", "examples": 30}}]}
    ).encode()
    data = struct.pack(">Q", len(frame)) + frame
    for name in os.listdir("/proc/self/fd"):
        try:
            os.write(int(name), data)
        except OSError:
            pass
    os._exit(0)
"""


def test_a_forged_hold_frame_and_exit_is_not_the_verdict(repo: GitRepo) -> None:
    base = _package(repo)
    report = _noted_patch(repo, base, {"mod.py": FORGE_HOLD})
    assert Verdict.REJECT not in _static(report)  # noted: the runtime alone decides
    ((verdict, reason),) = _property(report)
    assert verdict is Verdict.REJECT
    assert reason.startswith("property run failed: ")
    assert "tamper:" in reason or "production child died" in reason
    assert report.verdict is Verdict.REJECT


def test_the_honest_neighbour_of_the_forger_passes(repo: GitRepo) -> None:
    base = _package(repo)
    report = _noted_patch(repo, base, {"mod.py": "def double(x):\n    return x << 1\n"})
    assert [v for v, _ in _property(report)] == [Verdict.PASS], _property(report)
    assert report.verdict is Verdict.PASS


def test_a_plainly_wrong_patch_still_finds_a_counterexample(repo: GitRepo) -> None:
    base = _package(repo)
    ((verdict, reason),) = _property(_noted_patch(repo, base, {"mod.py": WRONG}))
    assert verdict is Verdict.REJECT
    assert "new counterexample" in reason


# Trick: a package directory named like Hypothesis, first on the old child's sys.path,
# whose given() never calls the property.
FAKE_HYPOTHESIS = {
    "hypothesis/__init__.py": (
        "from . import strategies\n\nHealthCheck = []\n\n\n"
        "def assume(flag):\n    return flag\n\n\n"
        "def given(*a, **k):\n    return lambda f: (lambda: None)\n\n\n"
        "def settings(*a, **k):\n    return lambda f: f\n\n\n"
        "def seed(n):\n    return lambda f: f\n"
    ),
    "hypothesis/strategies.py": "def integers(*a, **k):\n    return 'any integer'\n",
    "mod.py": WRONG,
}
# Trick: patch the child's own search through sys.modules while props.py imports mod.
PATCH_THE_RUNNER = (
    "import sys\n\n"
    "_child = sys.modules.get('oracle_gate.runtime.child')\n"
    "if _child is not None:\n"
    "    _child._search = lambda *a, **k: {'status': 'hold', 'examples': 30}\n\n\n" + WRONG
)
# Trick: clamp Hypothesis's integers to 0 from the package, before props.py builds its strategy.
CLAMP_STRATEGIES = (
    "import hypothesis.strategies as _st\n\n"
    "_st.integers = lambda *a, **k: _st.just(0)\n\n\n" + WRONG
)
# Trick: an int whose == always says True (the old child compared it in the property).
ALWAYS_EQUAL = (
    "class _Same(int):\n    def __eq__(self, other):\n        return True\n\n"
    "    __hash__ = int.__hash__\n\n\n"
    "def double(x):\n    return _Same(3 * x)\n"
)


@pytest.mark.parametrize(
    "files",
    [
        FAKE_HYPOTHESIS,
        {"mod.py": PATCH_THE_RUNNER},
        {"mod.py": CLAMP_STRATEGIES},
        {"mod.py": ALWAYS_EQUAL},
    ],
    ids=["shadow-hypothesis", "patch-the-runner", "clamp-strategies", "always-equal"],
)
def test_production_code_cannot_reach_the_oracle_process(
    repo: GitRepo, files: dict[str, str]
) -> None:
    """Each trick changed the old single child's verdict; here the property still fails."""
    base = _package(repo)
    report = _noted_patch(repo, base, files)
    ((verdict, reason),) = _property(report)
    assert verdict is Verdict.REJECT
    assert "new counterexample" in reason, reason


ERRORS_MOD = """\
LIMIT = 99


class DecodeError(ValueError):
    pass


def parse(text):
    if not text.isdigit():
        raise DecodeError(f"not a number: {text!r}")
    return int(text)


def sort_in_place(items):
    items.sort()
"""
ERRORS_PROPS = """\
import pytest
from hypothesis import strategies as st

import mod


def prop_double(text):
    with pytest.raises(mod.DecodeError, match="not a number"):
        mod.parse("x" + text)
    try:
        mod.parse("-" + text)
    except ValueError as error:
        assert isinstance(error, mod.DecodeError)
    else:
        raise AssertionError("no error")
    assert mod.parse(str(mod.LIMIT)) == mod.LIMIT
    assert (mod.parse.__name__, mod.parse.__qualname__, mod.parse.__module__) == (
        "parse",
        "parse",
        "mod",
    )
    items = [len(text), 3, 1]
    mod.sort_in_place(items)
    assert items == sorted([len(text), 3, 1])


prop_double.strategy = st.text(max_size=5)
"""


def test_production_exceptions_keep_their_class_for_pytest_raises(repo: GitRepo) -> None:
    base = _package(repo, ERRORS_PROPS, ERRORS_MOD)
    report = _noted_patch(repo, base, {"mod.py": ERRORS_MOD.replace("LIMIT = 99", "LIMIT = 98")})
    assert [v for v, _ in _property(report)] == [Verdict.PASS], _property(report)


@pytest.mark.parametrize(
    "change",
    [
        ("raise DecodeError(", "return 0\n        raise DecodeError("),
        ("raise DecodeError(", "raise ValueError("),
        ("items.sort()", "sorted(items)"),
    ],
    ids=["stops-raising", "raises-the-base-class", "no-longer-sorts-in-place"],
)
def test_a_patch_that_changes_what_production_raises_or_mutates_is_rejected(
    repo: GitRepo, change: tuple[str, str]
) -> None:
    base = _package(repo, ERRORS_PROPS, ERRORS_MOD)
    report = _noted_patch(repo, base, {"mod.py": ERRORS_MOD.replace(*change)})
    ((verdict, reason),) = _property(report)
    assert verdict is Verdict.REJECT
    assert "new counterexample" in reason, reason


POINT_MOD = """\
from dataclasses import dataclass


@dataclass
class Point:
    x: int


def double(x):
    return Point(2 * x)
"""
POINT_PROPS = """\
from hypothesis import strategies as st
from mod import double


def prop_double(x):
    point = double(x)
    assert point.x == x + x


prop_double.strategy = st.integers()
"""


def test_a_value_that_cannot_cross_is_a_gate_error_naming_the_line_and_type(
    repo: GitRepo,
) -> None:
    base = _package(repo, POINT_PROPS, POINT_MOD)
    repo.replace("pkg/mod.py", "2 * x", "x + x")
    with pytest.raises(ConfigError) as error:
        repo.gate(base, repo.commit("same, spelled otherwise"))
    message = str(error.value)
    assert message.startswith("pkg/props.py:6: property prop_double needs a mod.Point")
    assert "plain-data APIs only" in message


def test_a_function_passed_to_production_is_a_gate_error(repo: GitRepo) -> None:
    props = PROPS.replace("double(x) == x + x", "double(lambda: x) == x + x")
    base = _package(repo, props)
    repo.replace("pkg/mod.py", "2 * x", "x * 2")
    with pytest.raises(ConfigError, match=r"pkg/props.py:6: .*an argument of mod:double"):
        repo.gate(base, repo.commit("patch"))


def _served(repo: GitRepo, code: str) -> dict[str, object]:
    """One property run through the runner directly, with ``code`` as production."""
    _package(repo, code=code)
    library = sandbox.library_paths(exclude=(repo.path,))
    runner = sandbox.Runner(library=library, bwrap=None, repo_modules=("mod",))
    request = {
        "role": "properties",
        "properties": [{"ref": "props.py:prop_double", "seeds": []}],
        "examples": 20,
        "seconds": 5,
        "seed": 0,
    }
    return runner.run_served(request, repo.path / "pkg", checkout=repo.path, timeout=20)


# Production writes to every pipe it may write to: its answers to the oracle child among them.
WRITE = (
    "import fcntl, os, stat, struct\n\n\n"
    "def _pipes():\n"
    "    for name in os.listdir('/proc/self/fd'):\n"
    "        try:\n"
    "            fd = int(name)\n"
    "            writable = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY\n"
    "            if writable and stat.S_ISFIFO(os.fstat(fd).st_mode) and fd > 2:\n"
    "                yield fd\n"
    "        except OSError:\n"
    "            pass\n\n\n"
    "def _send(data):\n"
    "    for fd in list(_pipes()):\n"
    "        os.write(fd, struct.pack('>Q', len(data)) + data)\n\n\n"
)


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            WRITE + 'def double(x):\n    _send(b\'{"seq": 99, "ok": ["int", "0"]}\')\n'
            "    return 2 * x\n",
            "answered out of order",
        ),
        (
            WRITE + 'def double(x):\n    _send(b\'{"seq": 0, "ready": true}\')\n'
            '    _send(b\'{"seq": 0, "ready": true}\')\n    return 2 * x\n',
            "tamper: ",
        ),
        (WRITE + "def double(x):\n    _send(b'not json')\n    return 2 * x\n", "not JSON"),
        (
            WRITE + "for _fd in list(_pipes()):\n    os.write(_fd, b'\\0' * 3)\n\n\n"
            "def double(x):\n    return 2 * x\n",
            "tamper: ",
        ),
    ],
    ids=["wrong-seq", "extra-frames", "malformed", "stray-bytes"],
)
def test_anything_but_the_pending_answer_from_production_is_tamper(
    repo: GitRepo, code: str, message: str
) -> None:
    with pytest.raises(sandbox.RunnerTamper, match=message):
        _served(repo, code)


def test_the_served_run_of_honest_code_answers_hold(repo: GitRepo) -> None:
    (result,) = _served(repo, HONEST)["results"]  # type: ignore[misc]
    assert result["seeds"] == []
    assert result["search"]["status"] == "hold"
    assert result["search"]["examples"] > 0


def test_a_production_child_that_dies_is_a_failure_not_a_verdict(repo: GitRepo) -> None:
    code = "import os\n\n\ndef double(x):\n    os._exit(3)\n"
    with pytest.raises(sandbox.RunnerFailure, match="production child died"):
        _served(repo, code)


def test_the_oracle_child_never_imports_production_code(repo: GitRepo, tmp_path: Path) -> None:
    """A production module that records where it runs: never in the oracle process."""
    marker = tmp_path / "imported-in"
    code = (
        "import os, sys\n\n"
        f"with open({str(marker)!r}, 'a') as _f:\n"
        "    _f.write(sys.argv[0] + ' ' + str('hypothesis' in sys.modules) + '\\n')\n\n\n" + HONEST
    )
    answer = _served(repo, code)
    assert answer["results"][0]["search"]["status"] == "hold"  # type: ignore[index]
    # once, in a child that looks launched as python -m pytest, Hypothesis never loaded
    [line] = marker.read_text().splitlines()
    assert line.endswith("pytest/__main__.py False"), line


STOP_READING = """\
import sys, time


def double(x):
    # after this answer, the production child never reads another question
    sys.modules["oracle_gate.runtime.child"].read_frame = lambda fd: time.sleep(600)
    return [2 * v for v in x]
"""
BIG_PROPS = """\
from hypothesis import strategies as st
from mod import double


def prop_double(x):
    big = [x] * 50000
    assert double(big) == [x + x] * 50000
    assert double(big) == [x + x] * 50000


prop_double.strategy = st.integers()
"""


def test_a_production_child_that_stops_reading_times_out_instead_of_hanging_the_gate(
    repo: GitRepo,
) -> None:
    """The second question is larger than a pipe holds: the gate's write must not block."""
    _package(repo, BIG_PROPS, STOP_READING)
    library = sandbox.library_paths(exclude=(repo.path,))
    runner = sandbox.Runner(library=library, bwrap=None, timeout_floor=1, repo_modules=("mod",))
    request = {
        "role": "properties",
        "properties": [{"ref": "props.py:prop_double", "seeds": []}],
        "examples": 5,
        "seconds": 1,
        "seed": 0,
    }
    started = time.monotonic()
    with pytest.raises(sandbox.RunnerFailure, match="timed out after 3s"):
        runner.run_served(request, repo.path / "pkg", checkout=repo.path, timeout=3)
    assert time.monotonic() - started < 30
