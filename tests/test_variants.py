"""The shifted environment (``runtime/variants.py``): head code that behaves one way when
the gate runs it and another when run as production is, is rejected by the replay; code and
tests that merely read the clock or the environment still merge."""

from __future__ import annotations

import json
import os
import shutil
import sysconfig
from pathlib import Path

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Verdict
from oracle_gate.runtime import variants
from oracle_gate.runtime.sandbox import Runner, library_paths
from oracle_gate.runtime.variants import SHIFTED, USUAL

needs_faketime = pytest.mark.skipif(
    variants.clock_library() is None and not os.environ.get("ORACLE_GATE_REQUIRE_BWRAP"),
    reason="libfaketime not installed",
)

TEST = "from mod import double\n\n\ndef test_double():\n    assert double(2) == 4\n"


def _package(
    repo: GitRepo, code: str = "def double(x):\n    return 2 * x\n", test: str = TEST
) -> str:
    """pkg/ with one test file and one row over mod.py, locked and committed."""
    repo.write(
        "pkg/invariants.yaml",
        'version: 1\ntests: ["tests/test_*.py"]\nrows:\n  - id: r\n    globs: ["mod.py"]\n'
        "    budget: {seconds: 30}\n",
    )
    repo.write("pkg/mod.py", code)
    repo.write("pkg/tests/test_mod.py", test)
    repo.write("pkg/flake_freeze.yaml", "frozen: []\nbudget: 2\n")
    repo.write("oracle-gate.toml", "timeout-floor = 1\n")
    repo.relock("pkg")
    return repo.commit("tested package")


def _reasons(repo: GitRepo, base: str, code: str) -> tuple[Verdict, str]:
    repo.write("pkg/mod.py", code)
    report = repo.gate(base, repo.commit("double, rewritten"))
    return report.verdict, "\n".join(f.reason for f in report.findings)


# Each doubles correctly in the usual environment and wrongly once the clock or the
# environment looks like production's.
CHEATS = {
    "tm_year": (
        "import time\n\n\ndef double(x):\n    return 2 * x + (time.localtime().tm_year > 2026)\n"
    ),
    "toordinal": (
        "import datetime\n\n\ndef double(x):\n"
        "    late = datetime.date.today().toordinal() > 740_133\n"
        "    return 2 * x + late\n"
    ),
    "strftime": (
        "import time\n\n\ndef double(x):\n"
        "    return 2 * x if time.strftime('%Y-%m') < '2027-06' else 2 * x + 1\n"
    ),
    # How the run was launched: the usual one looks like ``python -m pytest``, the shifted
    # one like the pytest script, and production runs either way.
    "launch": (
        "import sys\n\n\ndef double(x):\n"
        "    return 2 * x + (not sys.argv[0].endswith('__main__.py'))\n"
    ),
    # The names are the static lane's ("sandbox tell 'SHLVL'"); not spelled, they are not.
    "shell variables": (
        "import os\n\n\ndef double(x):\n"
        "    shell = any(k.startswith('SH') and k.endswith('LVL') for k in os.environ)\n"
        "    return 2 * x + shell\n"
    ),
}


# Each doubles correctly only where a child looks like no plain test run: ``__main__``
# without a file, or holding the gate's own bootstrap names, ``-c`` as the program.
GATE_LOOKS = {
    "no __main__ file": (
        "import sys\n\n\ndef double(x):\n"
        "    return 2 * x + hasattr(sys.modules['__main__'], '__file__')\n"
    ),
    "bootstrap names": (
        "import sys\n\n\ndef double(x):\n"
        "    return 2 * x + (not hasattr(sys.modules['__main__'], 'main'))\n"
    ),
    "argv -c": "import sys\n\n\ndef double(x):\n    return 2 * x + (sys.argv[0] != '-c')\n",
}


@pytest.mark.parametrize("code", GATE_LOOKS.values(), ids=GATE_LOOKS.keys())
def test_head_code_that_only_works_where_no_plain_run_is_fails_the_replay(
    repo: GitRepo, code: str
) -> None:
    """The gate's children look launched as a plain test run in both environments, so
    code that works only in the gate's own look breaks the parent's test."""
    base = _package(repo)
    verdict, reasons = _reasons(repo, base, code)
    assert "replay regress: tests/test_mod.py::test_double" in reasons, reasons
    assert verdict is Verdict.REJECT


@needs_faketime
@pytest.mark.parametrize("code", CHEATS.values(), ids=CHEATS.keys())
def test_head_code_that_tells_the_gate_from_production_is_rejected(
    repo: GitRepo, code: str
) -> None:
    base = _package(repo)
    verdict, reasons = _reasons(repo, base, code)
    assert "behaviour depends on how it is run: tests/test_mod.py::test_double passes" in reasons
    assert verdict is Verdict.REJECT


# Each reads the clock or the environment, the same way on both sides of the patch.
HONEST = {
    "clock read": (
        "import time\n\n_CALLS = []\n\n\ndef double(x):\n"
        "    _CALLS.append(time.time())\n    return x + x\n"
    ),
    "environment read": (
        "import os\n\n\ndef double(x):\n    return int(os.environ.get('DOUBLE_FACTOR', '2')) * x\n"
    ),
    # the command line read as argparse reads it: the same arguments in both
    "arguments read": (
        "import argparse\n\n\ndef double(x):\n"
        "    argparse.ArgumentParser().parse_known_args()\n    return 2 * x\n"
    ),
}


@needs_faketime
@pytest.mark.parametrize("code", HONEST.values(), ids=HONEST.keys())
def test_head_code_that_reads_the_clock_or_environment_honestly_merges(
    repo: GitRepo, code: str
) -> None:
    base = _package(repo)
    verdict, reasons = _reasons(repo, base, code)
    assert "replay: the parent's 1 passing test(s) also pass on the head's code" in reasons
    assert verdict is Verdict.PASS, reasons


DATED_TEST = (
    "import datetime\n\nfrom mod import double\n\n\ndef test_double():\n"
    "    assert double(2) == 4\n\n\ndef test_not_expired():\n"
    "    assert double(1) == 2\n"
    "    assert datetime.date.today() < datetime.date(2027, 6, 1)\n"
)


@needs_faketime
def test_a_parent_test_that_depends_on_the_date_itself_is_not_the_patchs_doing(
    repo: GitRepo,
) -> None:
    """The test fails in the shifted environment on the parent's code too: an honest
    refactor merges, and the report says why that test was not judged there."""
    base = _package(repo, test=DATED_TEST)
    verdict, reasons = _reasons(repo, base, "def double(x):\n    return x + x\n")
    assert (
        "tests/test_mod.py::test_not_expired fails in the shifted environment on the "
        "parent's code too: not judged there" in reasons
    )
    assert verdict is Verdict.PASS, reasons


@needs_faketime
def test_a_time_bomb_beside_a_dated_test_is_still_rejected(repo: GitRepo) -> None:
    """The cheat beside the dated test: that test is excused, the bomb's is not."""
    base = _package(repo, test=DATED_TEST)
    verdict, reasons = _reasons(repo, base, CHEATS["strftime"])
    assert "behaviour depends on how it is run: tests/test_mod.py::test_double" in reasons
    assert verdict is Verdict.REJECT


PROBE = """import json, os, socket, sys, time


def run(x):
    return json.dumps({
        "year": time.localtime().tm_year,
        "host": socket.gethostname(),
        "shell": sorted(k for k in ("PWD", "SHLVL", "_") if k in os.environ),
        "clock": sorted(k for k in os.environ if "FAKE" in k or k == "LD_PRELOAD"),
        "seed": os.environ["PYTHONHASHSEED"],
        "cwd": os.environ.get("PWD") == os.getcwd(),
        "main": os.path.basename(getattr(sys.modules["__main__"], "__file__", "")),
        "argv0": os.path.basename(sys.argv[0]),
        "orig_argv": sys.orig_argv[1:3],
        "names": sorted(n for n in vars(sys.modules["__main__"]) if not n.startswith("__")),
    })
"""


def _probe(runner: Runner, repo: GitRepo) -> dict[str, object]:
    request = {"role": "subject", "subject": "mod:run", "inputs": [["int", "1"]]}
    answer = runner.run(request, repo.path / "pkg", checkout=repo.path)
    [output] = answer["outputs"]
    result: dict[str, object] = json.loads(output["ok"][1])
    return result


@needs_faketime
@pytest.mark.parametrize("bwrap", [shutil.which("bwrap"), None], ids=["bwrap", "plain"])
def test_the_shifted_environment_differs_in_clock_host_shell_and_seed(
    repo: GitRepo, bwrap: str | None
) -> None:
    """What the shifted child reads differs from the usual one's where the docs say, and
    libfaketime's own variables are gone before code of the checkout runs."""
    if bwrap is None and os.geteuid() == 0:
        pytest.skip("a root gate never runs code without bubblewrap")
    repo.write("pkg/mod.py", PROBE)
    runner = Runner(library=library_paths([repo.path]), bwrap=bwrap)
    usual, shifted = _probe(runner, repo), _probe(runner.shifted(), repo)
    assert shifted["year"] >= usual["year"] + 1  # type: ignore[operator]
    # bubblewrap sets PWD where it changes directory; a shell sets all three
    assert "SHLVL" not in usual["shell"]  # type: ignore[operator]
    assert shifted["shell"] == ["PWD", "SHLVL", "_"]
    assert shifted["cwd"] is True
    assert usual["clock"] == shifted["clock"] == []
    assert usual["seed"] != shifted["seed"]
    assert (usual["host"] != shifted["host"]) is (bwrap is not None)
    # python -m pytest, then the pytest script: neither with the bootstrap's names
    assert (usual["main"], usual["argv0"], usual["orig_argv"]) == (
        "__main__.py",
        "__main__.py",
        ["-m", "pytest"],
    )
    script = os.path.join(sysconfig.get_path("scripts"), "pytest")
    assert (shifted["main"], shifted["argv0"], shifted["orig_argv"]) == (
        "pytest",
        "pytest",
        [script],
    )
    assert usual["names"] == shifted["names"] == []


def test_the_report_says_what_the_shifted_environment_changes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """And says so when it cannot move the clock: a missing libfaketime is never silent."""
    library = tmp_path / "libfaketimeMT.so.1"
    library.write_bytes(b"")
    monkeypatch.setenv(variants.LIBRARY_SETTING, str(library))
    assert SHIFTED.described(variants.clock_library(), True) == (
        "the clock 400 days ahead, another host name, a shell's PWD, SHLVL and _, "
        "another PYTHONHASHSEED, launched as the pytest script"
    )
    monkeypatch.setenv(variants.LIBRARY_SETTING, str(tmp_path / "missing.so"))
    assert variants.clock_library() is None
    assert SHIFTED.described(None, False).startswith(
        "the real clock (libfaketime not found: apt-get install libfaketime"
    )
    assert USUAL.described(str(library), True) == ""


def _partitioned(repo: GitRepo, code: str, contract: str) -> str:
    """pkg/ with one partition row P1 over mod:run, committed."""
    repo.write(
        "pkg/invariants.yaml",
        'version: 1\nrows:\n  - id: r\n    globs: ["mod.py"]\n'
        '    partitions: ["partitions.py:PARTITIONS"]\n    budget: {seconds: 30}\n',
    )
    repo.write("pkg/mod.py", code)
    repo.write(
        "pkg/partitions.py",
        'SUBJECT = "mod:run"\nPARTITIONS = [{"id": "P1", "kind": "representative", '
        f'"input": 2, "contract": lambda out: {contract}}}]\n',
    )
    repo.write("oracle-gate.toml", "timeout-floor = 1\n")
    return repo.commit("partitioned package")


def _partition_reasons(repo: GitRepo, base: str, code: str) -> tuple[Verdict, str]:
    repo.write("pkg/mod.py", code)
    report = repo.gate(base, repo.commit("run, rewritten"))
    return report.verdict, "\n".join(f.reason for f in report.findings)


PARTITION_BOMB = (
    "import time\n\n\ndef run(x):\n    return 2 * x if time.strftime('%Y-%m') < '2027-06' else 0\n"
)


@needs_faketime
def test_a_partition_row_whose_contract_fails_only_with_the_clock_ahead_is_rejected(
    repo: GitRepo,
) -> None:
    base = _partitioned(repo, "def run(x):\n    return 2 * x\n", "out == 4")
    verdict, reasons = _partition_reasons(repo, base, PARTITION_BOMB)
    assert (
        "partition P1: behaviour depends on how it is run: on the head's code its contract "
        "holds in the usual environment and fails in the shifted one" in reasons
    )
    assert verdict is Verdict.REJECT


DATED = "import datetime\n\n\ndef run(x):\n    return [2 * x, datetime.date.today().isoformat()]\n"


@needs_faketime
def test_a_partition_row_whose_output_carries_the_date_merges_while_its_contract_holds(
    repo: GitRepo,
) -> None:
    """The outputs differ between the two environments; what the contract says does not."""
    base = _partitioned(repo, DATED, "out[0] == 4 and len(out[1]) == 10")
    verdict, reasons = _partition_reasons(repo, base, DATED.replace("2 * x", "x + x"))
    assert "all 1 partition rows hold" in reasons
    assert verdict is Verdict.PASS, reasons


# Right until June 2027: the clock 400 days ahead is past it, on either side of a patch.
DATED_UNTIL_JUNE = (
    "import datetime\n\n\ndef run(x):\n"
    "    return 2 * x if datetime.date.today() < datetime.date(2027, 6, 1) else None\n"
)


@needs_faketime
def test_a_partition_row_dated_on_the_parent_too_is_not_the_patchs_doing(repo: GitRepo) -> None:
    """The contract fails with the clock ahead on the parent's code as well."""
    base = _partitioned(repo, DATED_UNTIL_JUNE, "out == 4")
    verdict, reasons = _partition_reasons(repo, base, DATED_UNTIL_JUNE.replace("2 * x", "x + x"))
    assert "all 1 partition rows hold" in reasons
    assert verdict is Verdict.PASS, reasons


# A property and a relation over mod:run, each checking run(x) == 2 * x: (the matrix's
# row key and oracle file, the file's text, what the shifted-only reject says, what the
# honest pass says).
ORACLE_ROWS = {
    "property": (
        "properties",
        "props.py:prop_double",
        "from hypothesis import strategies as st\n\nfrom mod import run\n\n\n"
        "def prop_double(x):\n    assert run(x) == 2 * x\n\n\n"
        "prop_double.strategy = st.integers(0, 100)\n",
        "behaviour depends on how it is run: the property holds on the head's code in the "
        "usual environment and finds the counterexample",
        "no counterexample in 20 examples",
    ),
    "relation": (
        "relations",
        "relations.py:RELATIONS",
        'SUBJECT = "mod:run"\nRELATIONS = [{"id": "R_double", "inputs": [1, 2, 3], '
        '"transform": None, "compare": lambda out, x: out == 2 * x}]\n',
        "relation R_double: behaviour depends on how it is run: it holds on the head's code "
        "in the usual environment and fails for 3 of 3 inputs in the shifted one",
        "relation R_double holds on 3 inputs",
    ),
}


def _oracle_row(repo: GitRepo, kind: str, code: str) -> str:
    """pkg/ with one row of ``kind`` (ORACLE_ROWS) over mod:run, committed."""
    key, ref, text, _, _ = ORACLE_ROWS[kind]
    repo.write(
        "pkg/invariants.yaml",
        f'version: 1\nrows:\n  - id: r\n    globs: ["mod.py"]\n    {key}: ["{ref}"]\n'
        "    budget: {examples: 20, seconds: 30}\n",
    )
    repo.write("pkg/mod.py", code)
    repo.write(f"pkg/{ref.partition(':')[0]}", text)
    repo.write("oracle-gate.toml", "timeout-floor = 1\n")
    return repo.commit(f"a package with a {kind}")


@needs_faketime
@pytest.mark.parametrize("kind", ORACLE_ROWS)
def test_a_row_that_fails_only_with_the_clock_ahead_is_rejected(repo: GitRepo, kind: str) -> None:
    base = _oracle_row(repo, kind, "def run(x):\n    return 2 * x\n")
    verdict, reasons = _partition_reasons(repo, base, PARTITION_BOMB)
    assert ORACLE_ROWS[kind][3] in reasons, reasons
    assert verdict is Verdict.REJECT


@needs_faketime
@pytest.mark.parametrize("kind", ORACLE_ROWS)
def test_a_row_over_code_that_reads_the_clock_honestly_merges(repo: GitRepo, kind: str) -> None:
    """The head's code reads the date; the row holds in both environments."""
    base = _oracle_row(repo, kind, "def run(x):\n    return 2 * x\n")
    code = (
        "import datetime\n\n_SEEN = []\n\n\ndef run(x):\n"
        "    _SEEN.append(datetime.date.today().isoformat())\n    return x + x\n"
    )
    verdict, reasons = _partition_reasons(repo, base, code)
    assert ORACLE_ROWS[kind][4] in reasons, reasons
    assert "behaviour depends on how it is run" not in reasons, reasons
    assert verdict is Verdict.PASS, reasons


@needs_faketime
@pytest.mark.parametrize("kind", ORACLE_ROWS)
def test_a_row_dated_on_the_parent_too_is_not_the_patchs_doing(repo: GitRepo, kind: str) -> None:
    """The row fails with the clock ahead on the parent's code as well."""
    base = _oracle_row(repo, kind, DATED_UNTIL_JUNE)
    verdict, reasons = _partition_reasons(repo, base, DATED_UNTIL_JUNE.replace("2 * x", "x + x"))
    assert "behaviour depends on how it is run" not in reasons, reasons
    assert verdict is Verdict.PASS, reasons
