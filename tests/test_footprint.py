"""runtime/footprint.py: what each test ran, opened and listed, recorded in a real pytest run
(in a child process, as the replay's baseline records it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DRIVER = """
import json, sys
import pytest
from oracle_gate.runtime.footprint import Recorder

recorder = Recorder(sys.argv[1])
pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", sys.argv[1] + "/tests"],
            plugins=[recorder])
sys.__stdout__.write("\\n@@" + json.dumps(recorder.result()))
"""

MOD = """import os


def double(x):
    return 2 * x


def read(name):
    with open(os.path.join(os.path.dirname(__file__), name)) as handle:
        return handle.read()


def listing():
    return sorted(os.listdir(os.path.dirname(__file__)))
"""


def _record(tmp_path: Path, tests: str, files: dict[str, str] | None = None) -> dict[str, Any]:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "mod.py").write_text(MOD)
    (root / "data.txt").write_text("data\n")
    for path, text in (files or {}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "tests" / "test_mod.py").write_text(tests)
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={"PYTHONPATH": f"{root}:{Path(__file__).parents[1] / 'python'}", "PATH": "/usr/bin"},
        check=False,
    )
    assert "@@" in done.stdout, done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout.rpartition("@@")[2])
    return result


def _lines(footprint: dict[str, Any], file: str) -> set[int]:
    return {
        line for first, last in footprint["lines"].get(file, []) for line in range(first, last + 1)
    }


TESTS = """import mod


def test_double():
    assert mod.double(2) == 4


def test_read():
    assert mod.read("data.txt") == "data\\n"


def test_listing():
    assert "mod.py" in mod.listing()
"""


def test_each_test_has_the_lines_it_ran_and_the_session_what_collection_ran(
    tmp_path: Path,
) -> None:
    result = _record(tmp_path, TESTS)
    tests = result["tests"]
    double = "tests/test_mod.py::test_double"
    assert _lines(tests[double], "mod.py") == {5}
    assert not _lines(tests["tests/test_mod.py::test_read"], "mod.py") & {5}
    # importing mod (collection) ran its module code: the session's, every test's
    assert {1, 4, 8, 13} <= _lines(result["session"], "mod.py")
    assert all(not footprint["unrecorded"] for footprint in tests.values())


def test_a_file_opened_and_a_directory_listed_are_recorded_but_imports_are_not_reads(
    tmp_path: Path,
) -> None:
    tests = _record(tmp_path, TESTS)["tests"]
    assert tests["tests/test_mod.py::test_read"]["opened"] == ["data.txt"]
    assert tests["tests/test_mod.py::test_listing"]["listed"] == [""]
    assert tests["tests/test_mod.py::test_double"]["opened"] == []


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (
            "import subprocess, sys\n    subprocess.run([sys.executable, '-c', 'pass'])",
            "it started a process",
        ),
        (
            "import threading, time\n"
            "    threading.Thread(target=time.sleep, args=(3,), daemon=True).start()",
            "a thread (Thread-1 (sleep)) ran beside it",
        ),
        ("import sys\n    sys.settrace(None)", "it replaced the tracer"),
    ],
    ids=["process", "thread", "tracer"],
)
def test_what_the_tracer_cannot_see_makes_the_footprint_unrecorded(
    tmp_path: Path, body: str, why: str
) -> None:
    tests = f"def test_blind():\n    {body}\n\n\ndef test_plain():\n    pass\n"
    found = _record(tmp_path, tests)["tests"]
    assert found["tests/test_mod.py::test_blind"]["unrecorded"].startswith(why)
    # the thread outlives its test; no tracer is coverage's for the next test
    later = found["tests/test_mod.py::test_plain"]["unrecorded"]
    assert bool(later) is (why != "it started a process"), later


DOCTESTED = '''def twice(x):
    """
    >>> twice(2)
    4
    """
    return 2 * x
'''

BACK_LATER = """import doctest
import sys

import doc

SAVED = []


def test_doc():
    assert doctest.testmod(doc).failed == 0


def test_off():
    SAVED.append(sys.gettrace())
    sys.settrace(None)


def test_blind():
    assert doc.twice(1) == 2


def test_back():
    sys.settrace(SAVED[0])


def test_after():
    assert doc.twice(3) == 6
"""


def test_doctests_keep_the_tracer_and_a_test_that_puts_it_back_later_does_not(
    tmp_path: Path,
) -> None:
    """doctest puts back the tracer it found after each docstring: coverage's, so nothing
    is lost. A test that puts coverage's tracer back a test later still leaves the test
    between it and the one that replaced it blind."""
    found = _record(tmp_path, BACK_LATER, {"doc.py": DOCTESTED})["tests"]
    unrecorded = {nodeid.rpartition("::")[2]: f["unrecorded"] for nodeid, f in found.items()}
    assert unrecorded["test_doc"] == ""
    assert _lines(found["tests/test_mod.py::test_doc"], "doc.py") == {6}
    assert unrecorded["test_off"] == "it replaced the tracer"
    assert unrecorded["test_blind"].startswith("the tracer was not coverage's")
    assert unrecorded["test_back"].startswith("the tracer was not coverage's")
    assert unrecorded["test_after"] == ""
    assert _lines(found["tests/test_mod.py::test_after"], "doc.py") == {6}


def test_a_thread_started_and_joined_in_a_test_is_traced(tmp_path: Path) -> None:
    tests = (
        "import threading\n\nimport mod\n\n\ndef test_thread():\n"
        "    thread = threading.Thread(target=mod.double, args=(2,))\n"
        "    thread.start()\n    thread.join()\n"
    )
    found = _record(tmp_path, tests)["tests"]["tests/test_mod.py::test_thread"]
    assert found["unrecorded"] == ""
    assert _lines(found, "mod.py") == {5}


def test_a_session_fixture_counts_for_every_test_that_requests_it(tmp_path: Path) -> None:
    conftest = (
        "import pytest\n\nimport mod\n\n\n"
        '@pytest.fixture(scope="session")\ndef made():\n    return mod.double(1)\n'
    )
    tests = "def test_a(made):\n    assert made\n\n\ndef test_b(made):\n    assert made\n"
    found = _record(tmp_path, tests, {"tests/conftest.py": conftest})["tests"]
    assert _lines(found["tests/test_mod.py::test_a"], "mod.py") == {5}
    assert _lines(found["tests/test_mod.py::test_b"], "mod.py") == {5}


def test_the_repositorys_coverage_settings_change_nothing_recorded(tmp_path: Path) -> None:
    settings = {".coveragerc": "[run]\nomit = *\n", "setup.cfg": "[coverage:run]\nomit = *\n"}
    result = _record(tmp_path, TESTS, settings)
    assert _lines(result["tests"]["tests/test_mod.py::test_double"], "mod.py") == {5}


def test_a_traceback_shows_lines_and_a_whole_file_from_linecache_is_a_read_every_time(
    tmp_path: Path,
) -> None:
    # test_first fills linecache's store with mod.py, the later tests are served from it
    tests = (
        "import inspect, traceback\n\nimport mod\n\n\ndef _shown():\n    try:\n"
        "        mod.double(None)\n    except TypeError:\n        return traceback.format_exc()\n"
        "\n\ndef test_first():\n    assert '2 * x' in _shown()\n"
        "\n\ndef test_again():\n    assert '2 * x' in _shown()\n"
        "\n\ndef test_source():\n    assert '2 * x' in inspect.getsource(mod.double)\n"
    )
    found = _record(tmp_path, tests)["tests"]
    for name in ("test_first", "test_again"):
        footprint = found[f"tests/test_mod.py::{name}"]
        assert footprint["rendered"]["mod.py"] == [[5, 5]]
        assert "mod.py" not in footprint["opened"]
    assert found["tests/test_mod.py::test_source"]["opened"] == ["mod.py"]
