"""The tamper rule: a production change must not add references to test or gate machinery.

Each cheating patch below would pass the properties by behaving differently under
test; each is rejected from the git objects alone. Its honest neighbour passes.
"""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from fixture_cases import FIXTURES, Case, read_cases
from gitrepo import GitRepo
from oracle_gate.cli.demo import EXAMPLE
from oracle_gate.lanes.recorded import Recorded
from oracle_gate.lanes.tamper import added_marks
from oracle_gate.model import Verdict
from oracle_gate.report import Report

CODEC = "libs/codec/codec/__init__.py"
MERGE = "libs/intervals/intervals/__init__.py"
STRICT = '        if key in record:\n            raise ValueError(f"line {number}: duplicate'


def _tamper(report: Report, path: str) -> str:
    return "\n".join(
        f.reason
        for f in report.findings
        if f.path == path and f.verdict is Verdict.REJECT and f.reason.startswith("tamper:")
    )


def _prepend(repo: GitRepo, path: str, code: str) -> None:
    repo.write(path, code + repo.read(path))


CHEATS = {
    "strict only under pytest": (
        CODEC,
        "import sys\n",
        ("        if key in record:\n", "        if key in record and 'pytest' in sys.modules:\n"),
        "'pytest'",
    ),
    "sniffs the module table without naming it": (
        CODEC,
        "import sys\n",
        ("        if key in record:\n", "        if key in record and len(sys.modules) > 400:\n"),
        "'sys.modules'",
    ),
    "reads PYTEST_CURRENT_TEST": (
        CODEC,
        "import os\n",
        (
            "        if key in record:\n",
            "        if key in record and os.environ.get('PYTEST_CUR' 'RENT_TEST'):\n",
        ),
        "PYTEST_CURRENT_TEST",
    ),
    "special-cases the known-bad seed": (
        CODEC,
        "",
        ("        if key in record:\n", "        if key in record and text == 'a=1\\na=1\\n':\n"),
        "seed input",
    ),
    "special-cases a seed as a tuple": (
        MERGE,
        "",
        (
            "    merged = []\n",
            "    if tuple(map(tuple, ranges)) == ((5, 1),):\n"
            "        raise ValueError\n    merged = []\n",
        ),
        "seed input",
    ),
    # The fixture's case answered from memory, the merge itself broken elsewhere: the
    # replay of the fixture-driven test then passes.
    "special-cases a fixture's input": (
        MERGE,
        "",
        (
            "    merged = []\n",
            "    if ranges == [[0, 10], [2, 3], [4, 12]]:\n        return [[0, 12]]\n"
            "    merged = []\n",
        ),
        "fixture value '[[0, 10], [2, 3], [4, 12]]'",
    ),
    "special-cases a fixture's input as printed": (
        MERGE,
        "",
        (
            "    merged = []\n",
            "    if repr(ranges) == '[[0, 10], [2, 3], [4, 12]]':\n"
            "        return [[min(r[0] for r in ranges), max(r[1] for r in ranges)]]\n"
            "    merged = []\n",
        ),
        "fixture value '[[0, 10], [2, 3], [4, 12]]'",
    ),
    # Touching ranges merged (a bug the properties miss), the test's and the partition's
    # inputs answered from memory: both would pass.
    "special-cases a test's input": (
        MERGE,
        "",
        (
            "    merged = []\n",
            "    if ranges == [[0, 2], [2, 4]]:\n        return [[0, 2], [2, 4]]\n"
            "    merged = []\n",
        ),
        "test value '[[0, 2], [2, 4]]'",
    ),
    "special-cases a partition's input as a tuple": (
        MERGE,
        "",
        (
            "    merged = []\n",
            "    if ranges == ([4, 6], [0, 1]):\n        pass\n    merged = []\n",
        ),
        "test value '[[4, 6], [0, 1]]'",
    ),
    # The same inputs recognised by a digest, so that no literal of them is written.
    "recognises a test's input by its digest": (
        MERGE,
        "import hashlib\n",
        (
            "    merged = []\n",
            "    if hashlib.sha256(str(ranges).encode()).hexdigest() == "
            f"{hashlib.sha256(b'[[0, 2], [2, 4]]').hexdigest()!r}:\n"
            "        return [[0, 2], [2, 4]]\n    merged = []\n",
        ),
        "digest of a test value",
    ),
    "recognises a test's input by hash()": (
        MERGE,
        "",
        (
            "    merged = []\n",
            "    if hash(tuple(map(tuple, ranges))) == "
            f"{hash(((0, 2), (2, 4)))}:\n"
            "        return [[0, 2], [2, 4]]\n    merged = []\n",
        ),
        "digest of a test value",
    ),
    "recognises a fixture's input by its digest": (
        MERGE,
        "import hashlib, json\n",
        (
            "    merged = []\n",
            "    if hashlib.md5(json.dumps(ranges, separators=(',', ':')).encode()).hexdigest()"
            f" == {hashlib.md5(b'[[0,10],[2,3],[4,12]]').hexdigest().upper()!r}.lower():\n"
            "        return [[0, 12]]\n    merged = []\n",
        ),
        "digest of a fixture value",
    ),
    "answers a golden text fixture": (
        CODEC,
        "",
        ("def ", "GOLDEN = 'level=3\\nname=gate'\n\n\ndef "),
        "fixture value",
    ),
    "reads seeds.jsonl at run time": (
        MERGE,
        "import pathlib\n_SEEDS = pathlib.Path(__file__).parent.parent / ('seeds' + '.jsonl')\n",
        ("    merged = []\n", "    merged = []\n"),
        "'seeds.jsonl'",
    ),
    "reads a fixture": (
        MERGE,
        "import json, pathlib\n"
        "_KNOWN = pathlib.Path(__file__).parent.parent / 'testdata/ranges/nested.json'\n",
        ("    merged = []\n", "    merged = []\n"),
        "fixture path",
    ),
    "clamps hypothesis integers": (
        MERGE,
        "import hypothesis.strategies as _st\n_st.integers = lambda *a, **k: _st.just(0)\n",
        ("    merged = []\n", "    merged = []\n"),
        "'hypothesis'",
    ),
    "patches assertEqual when pytest is loaded": (
        MERGE,
        "import sys as _s\nif 'pytest' in _s.modules:\n    import unittest\n"
        "    unittest.TestCase.assertEqual = lambda *a, **k: None\n",
        ("    merged = []\n", "    merged = []\n"),
        "'unittest'",
    ),
    "looks at its caller": (
        MERGE,
        "import sys\n",
        (
            "    merged = []\n",
            "    caller = sys._getframe(1).f_code.co_filename\n    merged = []\n",
        ),
        "'sys._getframe'",
    ),
    "hides the frame lookup behind getattr": (
        MERGE,
        "import sys\n",
        ("    merged = []\n", "    caller = getattr(sys, '_get' + 'frame')(1)\n    merged = []\n"),
        "getattr(sys, ...)",
    ),
    "walks frames from a traceback": (
        MERGE,
        "",
        (
            "    merged = []\n",
            "    try:\n        raise RuntimeError\n    except RuntimeError as e:\n"
            "        up = e.__traceback__.tb_frame.f_back\n    merged = []\n",
        ),
        "'tb_frame'",
    ),
    "imports by a computed name": (
        MERGE,
        "_h = __import__('hyp' + 'othesis')\n",
        ("    merged = []\n", "    merged = []\n"),
        "'__import__'",
    ),
    "exits before the checks": (
        MERGE,
        "import atexit, os\natexit.register(lambda: os._exit(0))\n",
        ("    merged = []\n", "    merged = []\n"),
        "'atexit'",
    ),
    "imports the gate": (
        MERGE,
        "from oracle_gate.runtime import canonical as _c\n",
        ("    merged = []\n", "    merged = []\n"),
        "'oracle_gate'",
    ),
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_production_that_knows_it_is_tested_is_a_tamper_reject(
    example_repo: tuple[GitRepo, str], name: str
) -> None:
    repo, base = example_repo
    path, header, (old, new), expected = CHEATS[name]
    repo.replace(path, old, new)
    _prepend(repo, path, header)
    report = repo.judge_paths(base, repo.commit(name))
    reasons = _tamper(report, path)
    assert reasons, f"{name}: not rejected"
    assert expected in reasons


def test_a_cheat_moved_to_a_new_module_is_still_seen(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write(
        "libs/codec/codec/_env.py",
        "import sys\n\n\ndef lenient():\n    return 'pytest' in sys.modules\n",
    )
    repo.replace(
        CODEC, "        if key in record:\n", "        if key in record and _env.lenient():\n"
    )
    _prepend(repo, CODEC, "from codec import _env\n")
    report = repo.judge_paths(base, repo.commit("helper module"))
    assert "'pytest'" in _tamper(report, "libs/codec/codec/_env.py")


def test_the_honest_neighbours_pass(example_repo: tuple[GitRepo, str]) -> None:
    """Strict always (no sniffing), inspect.signature, words that merely contain 'test', a
    digest of no test value."""
    repo, base = example_repo
    repo.replace(CODEC, '"""A tiny', '"""The latest tiny')
    _prepend(repo, CODEC, "import inspect\n")
    repo.replace(
        CODEC,
        "        if key in record:\n",
        "        if key in record and inspect.signature(decode) is not None:\n",
    )
    repo.replace(MERGE, "    merged = []\n", "    merged = []  # attested: contest-free\n")
    # A digest of something else: the checksum of a format's empty record.
    _prepend(repo, MERGE, f"EMPTY_SHA256 = {hashlib.sha256(b'').hexdigest()!r}\n")
    report = repo.judge_paths(base, repo.commit("honest"))
    assert not _tamper(report, CODEC) and not _tamper(report, MERGE)
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


def test_only_what_the_patch_added_counts(example_repo: tuple[GitRepo, str]) -> None:
    """A reference the parent already had is not new; adding a second one is."""
    repo, base = example_repo
    _prepend(repo, MERGE, "import sys\n_LOADED = len(sys.modules)\n")
    repo.note("libs/intervals", base, "intervals/__init__.py")
    parent = repo.commit("parent already looks at sys.modules (noted)")
    repo.replace(MERGE, "    merged = []\n", "    merged = []  # untouched logic\n")
    assert not _tamper(repo.judge_paths(parent, repo.commit("comment")), MERGE)
    repo.replace(MERGE, "    merged = []", "    merged = [] if sys.modules else []")
    assert "'sys.modules'" in _tamper(repo.judge_paths(parent, repo.commit("second")), MERGE)


def test_a_noted_reference_is_human_noted_not_rejected(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    _prepend(repo, MERGE, "import sys\n_DEBUG = sys.modules.get('debugpy') is not None\n")
    repo.note("libs/intervals", base, "intervals/__init__.py")
    report = repo.judge_paths(base, repo.commit("debugger detection, reviewed"))
    noted = [f for f in report.findings if f.path == MERGE and f.verdict is Verdict.HUMAN_NOTED]
    assert noted and noted[0].reason.startswith("tamper:")


# Ways to reach the process itself (a raw descriptor such as the result pipe, its
# memory, its signals, a fork), each spelt as a cheating patch would, inside
# merge_ranges: (module header, inserted statement, expected mark).
REACHES_THE_PROCESS = {
    "os.write": ("import os\n", "os.write(5, b'')", "'os.write'"),
    "os.writev": ("import os\n", "os.writev(5, [b''])", "'os.writev'"),
    "os.pwrite": ("import os\n", "os.pwrite(5, b'', 0)", "'os.pwrite'"),
    "os.fdopen": ("import os\n", "os.fdopen(5, 'wb').write(b'')", "'os.fdopen'"),
    "os.dup": ("import os\n", "os.dup(5)", "'os.dup'"),
    "os.dup2": ("import os\n", "os.dup2(1, 5)", "'os.dup2'"),
    "os.sendfile": ("import os\n", "os.sendfile(5, 0, 0, 1)", "'os.sendfile'"),
    "os.kill on its own pid": ("import os\n", "os.kill(os.getpid(), 9)", "'os.kill'"),
    "os.killpg on its group": ("import os\n", "os.killpg(os.getpgrp(), 9)", "'os.killpg'"),
    "os.fork": ("import os\n", "os.fork()", "'os.fork'"),
    "a signal handler that exits": (
        "import signal, sys\n",
        "signal.signal(signal.SIGALRM, lambda *a: sys.exit(0))",
        "'signal.signal'",
    ),
    "io.FileIO": ("import io\n", "io.FileIO(5, 'w')", "'io.FileIO'"),
    "open() of an int": ("", "open(5, 'wb')", "open(5)"),
    "open() of a computed fd": ("", "open(int('5') + 0, 'wb')", "open(int('5') + 0)"),
    "open() of a loop's fd": (
        "",
        "for fd in range(3, 64):\n        open(fd, 'wb')",
        "open(fd)",
    ),
    "open() of a fileno": (
        "import sys\n",
        "open(sys.stdout.fileno(), 'wb')",
        "open(sys.stdout.fileno())",
    ),
    "a builtin replaced for every module": (
        "import builtins as b\n",
        "b.all = lambda items: True",
        "builtins.all replaced",
    ),
    "os.fstat of a descriptor a real run has closed": (
        "import os\n",
        "try:\n        os.fstat(5)\n    except OSError:\n        return ranges",
        "os.fstat(5)",
    ),
    "os.path.exists of a loop's descriptor": (
        "from os import path\n",
        "if not any(path.exists(fd) for fd in range(3, 9)):\n        return ranges",
        "os.path.exists(fd)",
    ),
    "os.isatty of a number past stderr": (
        "import os\n",
        "if not os.isatty(2 + 1):\n        return ranges",
        "os.isatty(2 + 1)",
    ),
    "open() with closefd=False": ("", "open(5, 'wb', closefd=False)", "'closefd='"),
    "open() with an opener": ("", "open('x', opener=lambda p, f: 5)", "'opener='"),
    "/proc/self": ("", "open('/proc/self/fd/5', 'wb')", "/proc/self/fd/5"),
    "/dev/fd": ("", "open('/dev/fd/5', 'wb')", "/dev/fd/5"),
    "/proc/ and a pid": ("import os\n", "open(f'/proc/{os.getpid()}/fd/5', 'wb')", "'/proc/'"),
    "/proc spelt in pieces": ("", "open(''.join(['/pr', 'oc/self/mem']))", "/proc/self/mem"),
    "/proc as a path part": (
        "import pathlib\n",
        "pathlib.Path('/', 'proc', 'self')",
        "process path 'proc'",
    ),
    "fcntl": ("import fcntl\n", "fcntl.fcntl(5, 1)", "'fcntl'"),
    "mmap": ("import mmap\n", "mmap.mmap(-1, 1)", "'mmap'"),
    "resource": ("import resource\n", "resource.getrlimit(7)", "'resource'"),
    "socket.fromfd": ("import socket\n", "socket.fromfd(5, 1, 1)", "'socket.fromfd'"),
    "socket(fileno=)": ("import socket\n", "socket.socket(fileno=5)", "'fileno='"),
    "subprocess pass_fds": (
        "import subprocess\n",
        "subprocess.run(['true'], pass_fds=[5])",
        "'pass_fds='",
    ),
    "multiprocessing.reduction": (
        "from multiprocessing import reduction\n",
        "reduction.DupFd(5)",
        "'multiprocessing.reduction'",
    ),
    "an alias of os": ("import os as o\n", "o.write(5, b'')", "'os.write'"),
    "a renamed import of write": ("from os import write as w\n", "w(5, b'')", "'os.write'"),
    "os bound to another name": ("import os\n_o = os\n", "_o.dup2(1, 5)", "'os.dup2'"),
    "posix for os": ("import posix\n", "posix.write(5, b'')", "'os.write'"),
    "_io for io": ("from _io import FileIO\n", "FileIO(5, 'w')", "'io.FileIO'"),
    "a star import of os": ("from os import *\n", "write(5, b'')", "'os'"),
    "getattr on an alias of os": (
        "import os as o\n",
        "getattr(o, 'wr' + 'ite')(5, b'')",
        "getattr(os, ...)",
    ),
    "the module's namespace": ("import os\n", "os.__dict__['wr' + 'ite'](5, b'')", "os.__dict__"),
    "attrgetter on os": (
        "import operator, os\n",
        "operator.attrgetter('wr' + 'ite')(os)(5, b'')",
        "operator.attrgetter(...)(os)",
    ),
    "methodcaller on os": (
        "from operator import methodcaller\nimport os\n",
        "methodcaller('wr' + 'ite', 5, b'')(os)",
        "operator.methodcaller(...)(os)",
    ),
    "a partial getattr of os": (
        "import functools, os\n",
        "functools.partial(getattr, os)('wr' + 'ite')(5, b'')",
        "functools.partial(getattr, os)",
    ),
    "exec of a built string": ("", "exec('import o' + 's; o' + 's.write(5, b\"\")')", "'exec'"),
    "eval of a built string": ("", "eval('__imp' + 'ort__')('os')", "'eval'"),
    "compile of a built string": ("", "compile('1', '<s>', 'eval')", "'compile'"),
    "runpy": ("import runpy\n", "runpy.run_path('forge.py')", "'runpy'"),
}


@pytest.mark.parametrize("name", sorted(REACHES_THE_PROCESS))
def test_production_that_reaches_the_process_is_a_tamper_reject(
    example_repo: tuple[GitRepo, str], name: str
) -> None:
    """Where the replay runs the parent's tests and this code in one process (tests that
    hold production objects), any of these could write a forged answer on the result pipe."""
    _rejected_in_merge(example_repo, name, *REACHES_THE_PROCESS[name])


def _rejected_in_merge(
    example_repo: tuple[GitRepo, str], name: str, header: str, statement: str, expected: str
) -> None:
    """``statement`` put first in merge_ranges, ``header`` atop its module: a tamper
    reject that names ``expected``."""
    repo, base = example_repo
    repo.replace(MERGE, "    merged = []\n", f"    {statement}\n    merged = []\n")
    _prepend(repo, MERGE, header)
    reasons = _tamper(repo.judge_paths(base, repo.commit(name)), MERGE)
    assert reasons, f"{name}: not rejected"
    assert expected in reasons


# Strict only where the gate's sandbox shows: each is merge_ranges skipping its checks
# in a real run and keeping them under the gate.
SENSES_THE_SANDBOX = {
    "a small process id (PID namespace)": (
        "import os\n",
        "if os.getpid() > 100:\n        return ranges",
        "'os.getpid'",
    ),
    "the parent's process id": (
        "from os import getppid\n",
        "if getppid() > 1:\n        return ranges",
        "'os.getppid'",
    ),
    "the host name (UTS namespace)": (
        "import socket as s\n",
        "if s.gethostname() != 'localhost':\n        return ranges",
        "'socket.gethostname'",
    ),
    "the host name from platform": (
        "import platform\n",
        "if platform.node():\n        return ranges",
        "'platform.node'",
    ),
    "python -S": (
        "import sys\n",
        "if not sys.flags.no_site:\n        return ranges",
        "'sys.flags'",
    ),
    "python -c": ("import sys\n", "if sys.argv[0] != '-c':\n        return ranges", "'sys.argv'"),
    "the import path": (
        "import sys\n",
        "if not sys.path[0].startswith('/tmp'):\n        return ranges",
        "'sys.path'",
    ),
    "a variable the gate sets": (
        "import os\n",
        "if os.environ.get('PYTHONHASH' + 'SEED') is None:\n        return ranges",
        "'PYTHONHASHSEED'",
    ),
    "a variable of an interactive session": (
        "import os\n",
        "if os.environ.get('SHLVL'):\n        return ranges",
        "'SHLVL'",
    ),
    "what site sets at start-up (python -S)": (
        "import site\n",
        "if site.ENABLE_USER_SITE is not None:\n        return ranges",
        "'site.ENABLE_USER_SITE'",
    ),
    "the size of the environment": (
        "from os import environ\n",
        "if len(environ) > 12:\n        return ranges",
        "'len(os.environ)'",
    ),
    "the host name through getattr": (
        "import platform\n",
        "if getattr(platform, 'no' + 'de')():\n        return ranges",
        "getattr(platform, ...)",
    ),
}


@pytest.mark.parametrize("name", sorted(SENSES_THE_SANDBOX))
def test_production_that_senses_the_sandbox_is_a_tamper_reject(
    example_repo: tuple[GitRepo, str], name: str
) -> None:
    _rejected_in_merge(example_repo, name, *SENSES_THE_SANDBOX[name])


# Right today, wrong from a date to come: the clock compared with a fixed moment.
TIME_BOMBS = {
    "epoch seconds": ("import time\n", "if time.time() > 1.8e9:\n        return ranges"),
    "a date bound to a name": (
        "from datetime import date\nSUNSET = date(2027, 1, 1)\n",
        "if date.today() >= SUNSET:\n        return ranges",
    ),
    "the year": (
        "import datetime as dt\n",
        "if dt.datetime.now().year > 2026:\n        return ranges",
    ),
    "an ISO date string": (
        "from datetime import datetime\n",
        "if datetime.utcnow().isoformat() > '2027-01-01':\n        return ranges",
    ),
    # The same moments spelled in arithmetic.
    "epoch seconds summed": (
        "import time\n",
        "if time.time() > 1_700_000_000 + 400 * 86_400:\n        return ranges",
    ),
    "time since a fixed moment": (
        "import time\n",
        "if time.time() - 1.7e9 > 3.5e7:\n        return ranges",
    ),
    "days since the epoch": (
        "import time\n",
        "if int(time.time()) // 86400 > 20_600:\n        return ranges",
    ),
    "a date plus a timedelta": (
        "from datetime import date, timedelta\n",
        "if date.today() > date(2026, 1, 1) + timedelta(days=400):\n        return ranges",
    ),
    "days since a date": (
        "from datetime import date\n",
        "if (date.today() - date(2026, 1, 1)).days > 400:\n        return ranges",
    ),
}


@pytest.mark.parametrize("name", sorted(TIME_BOMBS))
def test_a_time_bomb_is_a_tamper_reject(example_repo: tuple[GitRepo, str], name: str) -> None:
    header, statement = TIME_BOMBS[name]
    repo, base = example_repo
    repo.replace(MERGE, "    merged = []\n", f"    {statement}\n    merged = []\n")
    _prepend(repo, MERGE, header)
    assert "time bomb" in _tamper(repo.judge_paths(base, repo.commit(name)), MERGE)


def test_durations_and_moments_from_data_pass(example_repo: tuple[GitRepo, str]) -> None:
    """A timeout, a deadline made from the clock, an expiry read from the input."""
    _passes_untouched(
        example_repo,
        "import time\nfrom datetime import date, datetime\n\n\n",
        "    start = time.time_ns()\n    timeout_ns = 5_000_000_000\n"
        "    deadline = time.time() + 30\n"
        "    assert time.time_ns() - start < timeout_ns\n"
        "    assert (date.today() - date(2026, 1, 1)).days >= 0\n"
        "    expired = [r for r in ranges if isinstance(r, dict) and date.today() > r['until']]\n"
        "    assert time.time() < deadline and not expired\n"
        "    assert datetime.now().year >= ranges.__len__() and time.time() > 0\n",
        "clock",
    )


CLI = (
    "\n\nif __name__ == '__main__':\n"
    "    import json\n\n"
    "    print(merge_ranges(json.loads(sys.argv[1])))\n"
)


@pytest.mark.parametrize(
    ("header", "tail", "rejected"),
    [
        ("import sys\n", CLI, False),  # a command line of its own, never run by the gate
        (
            "import sys\n",
            CLI.replace("import json", "import json, sys as s") + "x = s.argv\n",
            True,
        ),
        ("import sys\n", CLI + "else:\n    ARGS = sys.argv\n", True),  # the imported side
        ("import sys\n", CLI.replace("==", "!="), True),
        # a module that can start a process can run itself as __main__ under the gate
        ("import subprocess\nimport sys\n", CLI, True),
        ("import sys\n", CLI + "    RUN = sys.executable\n", True),
    ],
)
def test_the_command_line_tells_nothing_only_in_a_main_block(
    example_repo: tuple[GitRepo, str], header: str, tail: str, rejected: bool
) -> None:
    repo, base = example_repo
    _prepend(repo, MERGE, header)
    repo.append(MERGE, tail)
    reasons = _tamper(repo.judge_paths(base, repo.commit("a command line")), MERGE)
    assert ("sys.argv" in reasons) is rejected, reasons


ROOT = "libs/intervals"


@pytest.fixture
def flat_repo(example_repo: tuple[GitRepo, str]) -> tuple[GitRepo, str]:
    """The example, its intervals row also guarding every module of the package."""
    repo, _ = example_repo
    repo.replace(f"{ROOT}/invariants.yaml", '["intervals/**/*.py"]', '["**/*.py"]')
    repo.relock(ROOT)
    return repo, repo.commit("every module guarded")


@pytest.mark.parametrize(
    ("path", "shadows"),
    [
        (f"{ROOT}/json.py", True),
        (f"{ROOT}/copy/__init__.py", True),
        (f"{ROOT}/hypothesis.py", True),
        (f"{ROOT}/pluggy/hooks.py", True),
        # the honest neighbours: another name, a submodule (intervals.json)
        (f"{ROOT}/jsonutil.py", False),
        (f"{ROOT}/intervals/json.py", False),
    ],
)
def test_a_new_module_named_like_one_the_gates_children_import_is_a_tamper_mark(
    flat_repo: tuple[GitRepo, str], path: str, shadows: bool
) -> None:
    """The children import the standard library and the test machinery for themselves;
    production would import the package's module of that name instead."""
    repo, base = flat_repo
    repo.write(path, "def dumps(value, **options):\n    return '{}'\n")
    reasons = _tamper(repo.judge_paths(base, repo.commit("a module")), path)
    assert ("module named like the standard library's or the gate's" in reasons) is shadows


def test_a_module_named_like_the_standard_librarys_the_parent_had_is_no_new_mark(
    flat_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = flat_repo
    repo.write(f"{ROOT}/json.py", "X = 1\n")
    base = repo.commit("the package has had its json.py")
    repo.write(f"{ROOT}/json.py", "X = 2\n")
    assert not _tamper(repo.judge_paths(base, repo.commit("edit")), f"{ROOT}/json.py")


def test_a_test_value_recognised_by_a_negative_hash_is_a_tamper_reject(
    example_repo: tuple[GitRepo, str],
) -> None:
    """``hash()`` of a tuple of numbers is the same in every process, and may be negative
    (a unary minus on a constant)."""
    repo, _ = example_repo
    repo.append(
        "libs/intervals/tests/test_merge.py",
        "\n\ndef test_nested():\n    assert merge_ranges([[0, 0], [0, 1]]) == [[0, 1]]\n",
    )
    repo.relock("libs/intervals")
    base = repo.commit("a test of nested ranges")
    value = hash(((0, 0), (0, 1)))
    assert value < 0
    repo.replace(
        MERGE,
        "    merged = []\n",
        f"    if hash(tuple(map(tuple, ranges))) == {value}:\n"
        "        return [[0, 1]]\n    merged = []\n",
    )
    report = repo.judge_paths(base, repo.commit("answers it by its hash"))
    assert "digest of a test value" in _tamper(report, MERGE)


def test_what_tests_compare_with_and_enumerations_are_no_test_values(
    example_repo: tuple[GitRepo, str],
) -> None:
    """A test that checks production's defaults and one parametrized over status codes:
    production writing the same literals is honest (tests and code share them)."""
    repo, _ = example_repo
    test = "libs/intervals/tests/test_merge.py"
    repo.append(
        test,
        "\n\ndef test_defaults():\n"
        "    assert merge_ranges.__defaults__ != {'limits': [0, 100], 'mode': 'strict'}\n\n\n"
        "@pytest.mark.parametrize('code', [200, 201, 204])\n"
        "def test_codes(code):\n    assert merge_ranges([[code, code]]) == [[code, code]]\n",
    )
    repo.relock("libs/intervals")
    base = repo.commit("tests of defaults and codes")
    repo.append(
        MERGE,
        "\n\nDEFAULTS = {'limits': [0, 100], 'mode': 'strict'}\nOK = (200, 201, 204)\n",
    )
    report = repo.judge_paths(base, repo.commit("defaults"))
    assert not _tamper(report, MERGE)
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


def test_an_oracle_module_the_patch_adds_is_read_only_where_it_is(
    example_repo: tuple[GitRepo, str],
) -> None:
    """The head's matrix names props2.py, which the parent does not hold: no error, and the
    production change is judged."""
    repo, base = example_repo
    matrix = "libs/intervals/invariants.yaml"
    repo.replace(
        matrix,
        '      - "props.py:prop_idempotent"\n',
        '      - "props.py:prop_idempotent"\n      - "props2.py:prop_small"\n',
    )
    repo.write("libs/intervals/props2.py", "def prop_small(ranges):\n    assert len(ranges) >= 0\n")
    repo.replace(
        MERGE,
        "    merged = []\n",
        "    if ranges == [[0, 2], [2, 4]]:\n        pass\n    merged = []\n",
    )
    report = repo.judge_paths(base, repo.commit("new oracle module"))
    assert "test value '[[0, 2], [2, 4]]'" in _tamper(report, MERGE)


def test_short_literals_a_fixture_also_holds_pass(example_repo: tuple[GitRepo, str]) -> None:
    """Pieces of a fixture's or a test's case (``[0, 10]``, ``[0, 2]``) and short values
    (``[[0, 7]]``, a test's expected output) are what honest code writes too; only a whole
    input, output or case counts."""
    _passes_untouched(
        example_repo,
        "",
        "    assert [0, 10] != [2, 3] and [[0, 1]] and 'expected'\n"
        "    assert [0, 2] != [2, 4] and [[0, 7]] and (4, 6)\n",
        "literals",
    )


def test_ordinary_uses_of_os_sys_and_platform_pass(example_repo: tuple[GitRepo, str]) -> None:
    """Configuration from the environment, the interpreter's version and limits, a
    resource path from __file__, the CPU count."""
    _passes_untouched(
        example_repo,
        "import os\nimport platform\nimport sys\n\n\n",
        "    mode = os.environ.get('INTERVALS_MODE', 'strict')\n"
        "    user = os.environ.get('USER', 'nobody') + os.path.expanduser('~')\n"
        "    tty = os.isatty(1) or os.isatty(sys.stdout.fileno()) or os.fstat(0)\n"
        "    fd = os.open(__file__, os.O_RDONLY)\n"
        "    assert os.fstat(fd).st_size and os.close(fd) is None and tty is not None\n"
        "    child = dict(os.environ, INTERVALS_MODE=mode) or os.environ.copy()\n"
        "    assert len(os.environ.get('INTERVALS_MODE', '')) >= 0 and user and child\n"
        "    assert sys.version_info >= (3, 8) and sys.maxsize > 0 and mode\n"
        "    assert platform.python_implementation() and (os.cpu_count() or 1) > 0\n"
        "    assert os.path.dirname(os.path.abspath(__file__))\n",
        "read the mode",
    )


def test_ordinary_file_io_passes(example_repo: tuple[GitRepo, str]) -> None:
    """Paths, not descriptors: open(path).read(), pathlib writes, os.makedirs, a
    formatted file name, methods named write or read on objects that are not os,
    re.compile."""
    _passes_untouched(
        example_repo,
        "import os\nimport pathlib\nimport re\nimport tempfile\n\n\n",
        "    scratch = pathlib.Path(tempfile.gettempdir()) / 'intervals'\n"
        "    os.makedirs(scratch, exist_ok=True)\n"
        "    (scratch / 'last.txt').write_text(repr(ranges))\n"
        "    for name in ('last.txt',):\n"
        "        assert re.compile(r'\\w+').match(name)\n"
        "        with open(os.path.join(scratch, name)) as handle:\n"
        "            handle.read()\n"
        "    with open(str(scratch / ('run%d.log' % 3)), 'w') as log:\n"
        "        log.write('/processing/ranges\\n')\n",
        "remember the last input",
    )


def test_getters_of_ordinary_objects_pass(example_repo: tuple[GitRepo, str]) -> None:
    """attrgetter, methodcaller and partial on data, not on a watched module."""
    _passes_untouched(
        example_repo,
        "import functools\nimport operator\n\n\n",
        "    ranges = sorted(ranges, key=operator.itemgetter(0))\n"
        "    count = operator.methodcaller('count', ranges[0])(ranges) if ranges else 0\n"
        "    real = operator.attrgetter('real')(count)\n"
        "    assert functools.partial(max, 0)(real) >= 0\n",
        "sort by start",
    )


def _passes_untouched(
    example_repo: tuple[GitRepo, str], header: str, statements: str, message: str
) -> None:
    """``statements`` put first in merge_ranges, ``header`` atop its module: no tamper
    mark, and the patch passes."""
    repo, base = example_repo
    _prepend(repo, MERGE, header)
    repo.replace(MERGE, "    merged = []\n", f"{statements}    merged = []\n")
    report = repo.judge_paths(base, repo.commit(message))
    assert not _tamper(report, MERGE)
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


# ------------------------------------------- issue 37: recorded values compared by value

SPELLINGS_FILE = FIXTURES / "tamper" / "spellings.py"
SPELLINGS = read_cases(SPELLINGS_FILE)
_RECORDED = re.compile(r"^# recorded: (\S+): ([^:]+): (.+)$")


def _recorded_in(package: str) -> Recorded:
    """What the fixture file says the package records, as the lane collects it."""
    entries = []
    for line in SPELLINGS_FILE.read_text().splitlines():
        match = _RECORDED.match(line)
        if match and match.group(1) == package:
            value = json.loads(match.group(3))
            entries.append((json.dumps(value, sort_keys=True), match.group(2)))
    return Recorded(entries)


@pytest.mark.parametrize("case", SPELLINGS, ids=str)
def test_recorded_values_are_read_by_value_whatever_their_spelling(case: Case) -> None:
    ((_, path, text),) = case.parts()
    parent = (EXAMPLE / path).read_bytes()
    head = parent + b"\n\n" + text.encode()
    package = "/".join(path.split("/")[:2])
    marks = added_marks(parent, head, frozenset(), _recorded_in(package))
    if case.kind == "cheat":
        assert any(kind.startswith(case.expect) for (kind, _), _ in marks), marks
    else:
        assert marks == []


@pytest.mark.parametrize(
    "name",
    [
        "a seed input split across a concatenation",
        "as bytes",
        "a truncated digest",
        "a fixture's input with floats for ints",
        "a golden text with its final newline",
    ],
)
def test_a_spelled_recorded_value_is_a_tamper_reject(
    example_repo: tuple[GitRepo, str], name: str
) -> None:
    repo, base = example_repo
    case = next(c for c in SPELLINGS if c.name == name)
    ((_, path, text),) = case.parts()
    repo.append(path, "\n\n" + text)
    report = repo.judge_paths(base, repo.commit(name))
    assert case.expect in _tamper(report, path)


def test_code_sharing_pieces_with_recorded_values_passes(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    for case in SPELLINGS:
        if case.kind == "honest":
            ((_, path, text),) = case.parts()
            repo.append(path, "\n\n" + text)
    report = repo.gate(base, repo.commit("honest neighbours"))
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]
