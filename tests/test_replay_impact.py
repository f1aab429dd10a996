"""The replay's test impact: only the parent's tests whose footprint meets the diff run again.

Each way around a footprint has its cheat (the patch breaks what a test checks through
that way: the test must run again, so the patch is rejected) and its honest neighbour
(a patch the test's footprint does not meet: the test keeps the parent's result).
"""

from __future__ import annotations

import json
import re

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Verdict
from oracle_gate.repo.cache import cache_dir
from oracle_gate.report import Report
from oracle_gate.runtime.reads import READS_FILE
from reports import replay_reasons

ROW = (
    'version: 1\ntests: ["tests/test_*.py"]\nrows:\n  - id: r\n    globs: ["**"]\n'
    "    budget: {seconds: 30}\n"
)


def _package(repo: GitRepo, files: dict[str, str], tests: str) -> str:
    """pkg/ with ``files`` (package-relative) and ``tests`` as tests/test_mod.py, locked and
    committed on a branch of its own; returns the commit."""
    repo.write("pkg/invariants.yaml", ROW)
    repo.write("pkg/flake_freeze.yaml", "frozen: []\nbudget: 2\n")
    repo.write("oracle-gate.toml", "timeout-floor = 1\n")
    for path, text in files.items():
        repo.write(f"pkg/{path}", text)
    repo.write("pkg/tests/test_mod.py", tests)
    repo.relock("pkg")
    return repo.commit("package")


def _patch(repo: GitRepo, base: str, name: str, edits: dict[str, str | None]) -> Report:
    """A branch ``name`` from ``base`` with ``edits`` (package-relative path -> new text, or
    None to delete), checked against ``base``."""
    repo.git("checkout", "-q", "-b", name, base)
    for path, text in edits.items():
        if text is None:
            repo.remove(f"pkg/{path}")
        else:
            repo.write(f"pkg/{path}", text)
    return repo.gate(base, repo.commit(name))


def _kept(report: Report) -> int:
    """How many tests kept the parent's result, from the replay's pass line."""
    found = re.search(r"(\d+) kept from the parent's run", replay_reasons(report))
    return int(found.group(1)) if found else 0


def _assert_rejected(report: Report, nodeid: str) -> None:
    assert f"replay regress: tests/test_mod.py::{nodeid} passes" in replay_reasons(report), (
        replay_reasons(report)
    )
    assert report.verdict is Verdict.REJECT


def _assert_kept(report: Report, kept: int) -> None:
    assert _kept(report) == kept, replay_reasons(report)
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]


# code reached only through a name built at run time

DYNAMIC = {
    "plugins/__init__.py": "",
    "plugins/fast.py": "def run(x):\n    return 2 * x\n",
    "plugins/slow.py": "def run(x):\n    return x + x\n",
    "registry.py": (
        "import importlib\n\n\ndef run(name, x):\n"
        '    return importlib.import_module("plugins." + name).run(x)\n'
    ),
}
DYNAMIC_TESTS = (
    'import registry\n\n\ndef test_fast():\n    assert registry.run("fa" + "st", 2) == 4\n'
)


def test_code_imported_by_a_name_built_at_run_time_is_in_the_footprint(repo: GitRepo) -> None:
    base = _package(repo, DYNAMIC, DYNAMIC_TESTS)
    report = _patch(repo, base, "cheat", {"plugins/fast.py": "def run(x):\n    return 2 * x + 1\n"})
    _assert_rejected(report, "test_fast")


def test_a_module_no_test_imports_keeps_every_parent_result(repo: GitRepo) -> None:
    base = _package(repo, DYNAMIC, DYNAMIC_TESTS)
    report = _patch(repo, base, "honest", {"plugins/slow.py": "def run(x):\n    return 2 * x\n"})
    _assert_kept(report, 1)


# entry points

ENTRY_POINTS = {
    "demo_plugins-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: demo-plugins\n"
    "Version: 1.0\n",
    "demo_plugins-1.0.dist-info/entry_points.txt": "[demo.plugins]\ndouble = impl_a:double\n",
    "impl_a.py": "def double(x):\n    return 2 * x\n",
    "impl_b.py": "def double(x):\n    return 2 * x + 1\n",
    "loader.py": (
        "from importlib.metadata import entry_points\n\n\ndef load(name):\n"
        '    (point,) = entry_points(group="demo.plugins", name=name)\n'
        "    return point.load()\n"
    ),
    "unrelated.py": "def unused():\n    return 0\n",
}
ENTRY_POINT_TESTS = (
    'import loader\n\n\ndef test_double():\n    assert loader.load("double")(2) == 4\n'
)


def test_an_entry_point_the_test_loads_is_in_the_footprint(repo: GitRepo) -> None:
    base = _package(repo, ENTRY_POINTS, ENTRY_POINT_TESTS)
    points = "[demo.plugins]\ndouble = impl_b:double\n"
    report = _patch(repo, base, "cheat", {"demo_plugins-1.0.dist-info/entry_points.txt": points})
    _assert_rejected(report, "test_double")


def test_a_module_beside_the_entry_points_keeps_the_parent_result(repo: GitRepo) -> None:
    base = _package(repo, ENTRY_POINTS, ENTRY_POINT_TESTS)
    report = _patch(repo, base, "honest", {"unrelated.py": "def unused():\n    return 1\n"})
    _assert_kept(report, 1)


# a plugin registry filled from a directory listing

REGISTRY = {
    "handlers/__init__.py": "",
    "handlers/a.py": (
        'from registry import register\n\n\n@register("double")\ndef double(x):\n    return 2 * x\n'
    ),
    "registry.py": (
        "import importlib\nimport os\n\nHANDLERS = {}\n\n\ndef register(name):\n"
        "    def add(function):\n        HANDLERS[name] = function\n        return function\n\n"
        "    return add\n\n\ndef handle(name, x):\n"
        '    here = os.path.join(os.path.dirname(__file__), "handlers")\n'
        "    for file in sorted(os.listdir(here)):\n"
        '        if file.endswith(".py") and file != "__init__.py":\n'
        '            importlib.import_module("handlers." + file[:-3])\n'
        "    return HANDLERS[name](x)\n"
    ),
    "tools/__init__.py": "",
    "tools/report.py": "def summary():\n    return ''\n",
}
REGISTRY_TESTS = (
    'import registry\n\n\ndef test_double():\n    assert registry.handle("double", 2) == 4\n'
)


def test_a_plugin_added_where_the_registry_lists_runs_the_test_again(repo: GitRepo) -> None:
    base = _package(repo, REGISTRY, REGISTRY_TESTS)
    override = REGISTRY["handlers/a.py"].replace("2 * x", "2 * x + 1")
    report = _patch(repo, base, "cheat", {"handlers/zz.py": override})
    _assert_rejected(report, "test_double")


def test_a_file_added_where_nothing_lists_keeps_the_parent_result(repo: GitRepo) -> None:
    base = _package(repo, REGISTRY, REGISTRY_TESTS)
    report = _patch(repo, base, "honest", {"tools/table.py": "def table():\n    return []\n"})
    _assert_kept(report, 1)


# a data file read under a computed path

DATA = {
    "data/small.json": '{"limit": 3}\n',
    "data/large.json": '{"limit": 30}\n',
    "limits.py": (
        "import json\nfrom pathlib import Path\n\n\ndef limit(kind):\n"
        '    path = Path(__file__).parent / "data" / (kind + ".json")\n'
        '    return json.loads(path.read_text())["limit"]\n'
    ),
}
DATA_TESTS = 'import limits\n\n\ndef test_small():\n    assert limits.limit("sm" + "all") == 3\n'


def test_a_data_file_read_under_a_computed_path_is_in_the_footprint(repo: GitRepo) -> None:
    base = _package(repo, DATA, DATA_TESTS)
    report = _patch(repo, base, "cheat", {"data/small.json": '{"limit": 4}\n'})
    _assert_rejected(report, "test_small")


def test_a_data_file_the_test_does_not_read_keeps_the_parent_result(repo: GitRepo) -> None:
    base = _package(repo, DATA, DATA_TESTS)
    report = _patch(repo, base, "honest", {"data/large.json": '{"limit": 40}\n'})
    _assert_kept(report, 1)


# a fixture of the session, computed once for the first test that asks

FIXTURE = {
    "tests/conftest.py": (
        "import pytest\n\nimport table\n\n\n"
        '@pytest.fixture(scope="session")\ndef built():\n    return table.build()\n'
    ),
    "table.py": ("def build():\n    return {'a': 1, 'b': 2}\n\n\ndef unused():\n    return 0\n"),
}
FIXTURE_TESTS = (
    "def test_a(built):\n    assert built['a'] == 1\n\n\n"
    "def test_b(built):\n    assert built['b'] == 2\n"
)


def test_a_session_fixture_counts_for_every_test_that_requests_it(repo: GitRepo) -> None:
    """test_a ran build() when the fixture was made; test_b got the value made for test_a,
    and must run again too (only it fails on the head)."""
    base = _package(repo, FIXTURE, FIXTURE_TESTS)
    report = _patch(repo, base, "cheat", {"table.py": FIXTURE["table.py"].replace("2}", "3}")})
    _assert_rejected(report, "test_b")


def test_a_function_no_fixture_runs_keeps_every_parent_result(repo: GitRepo) -> None:
    base = _package(repo, FIXTURE, FIXTURE_TESTS)
    honest = FIXTURE["table.py"].replace("return 0", "return 1")
    report = _patch(repo, base, "honest", {"table.py": honest})
    _assert_kept(report, 2)


# a module-level constant imported by value

CONSTANT = {
    "mod.py": "# limits\nLIMIT = 10\n\n\ndef cap(x):\n    return min(x, LIMIT)\n",
    "other.py": "from mod import LIMIT\n\nDOUBLE = 2 * LIMIT\n\n\ndef big():\n    return DOUBLE\n",
}
CONSTANT_TESTS = "import other\n\n\ndef test_big():\n    assert other.big() == 20\n"


def test_a_constant_imported_by_value_is_module_code_every_importer_stands_on(
    repo: GitRepo,
) -> None:
    base = _package(repo, CONSTANT, CONSTANT_TESTS)
    report = _patch(repo, base, "cheat", {"mod.py": CONSTANT["mod.py"].replace("10", "11")})
    _assert_rejected(report, "test_big")


def test_a_comment_in_the_module_keeps_the_parent_result(repo: GitRepo) -> None:
    base = _package(repo, CONSTANT, CONSTANT_TESTS)
    commented = CONSTANT["mod.py"].replace("# limits\n", "# limits, in units\n\n")
    report = _patch(repo, base, "honest", {"mod.py": commented})
    _assert_kept(report, 1)


# a side effect of a package's __init__.py

INIT = {
    "lib/__init__.py": '"""A library."""\n',
    "lib/core.py": (
        "import json\n\nOPTIONS = {}\n\n\ndef fmt(x):\n    return json.dumps(x, **OPTIONS)\n"
    ),
}
INIT_TESTS = (
    "import lib.core\n\n\ndef test_fmt():\n    assert lib.core.fmt({'a': 1}) == '{\"a\": 1}'\n"
)


def test_a_side_effect_added_to_an_init_runs_every_importer_again(repo: GitRepo) -> None:
    base = _package(repo, INIT, INIT_TESTS)
    patched = INIT["lib/__init__.py"] + 'from lib import core\n\ncore.OPTIONS["indent"] = 1\n'
    report = _patch(repo, base, "cheat", {"lib/__init__.py": patched})
    _assert_rejected(report, "test_fmt")


def test_a_comment_in_an_init_keeps_the_parent_result(repo: GitRepo) -> None:
    base = _package(repo, INIT, INIT_TESTS)
    commented = INIT["lib/__init__.py"] + "# nothing runs here\n"
    report = _patch(repo, base, "honest", {"lib/__init__.py": commented})
    _assert_kept(report, 1)


# a file a test's subprocess runs

TOOL = {
    "tool.py": "import sys\n\nprint(2 * int(sys.argv[1]))\n",
    "runner.py": (
        "import os\nimport subprocess\nimport sys\n\n"
        'TOOL = os.path.join(os.path.dirname(__file__), "tool.py")\n\n\n'
        "def run_tool(x):\n"
        "    done = subprocess.run([sys.executable, TOOL, str(x)], capture_output=True, "
        "text=True, check=True)\n"
        "    return int(done.stdout)\n\n\n"
        "def double(x):\n    return 2 * x\n"
    ),
}
TOOL_TESTS = (
    "import runner\n\n\ndef test_tool():\n    assert runner.run_tool(2) == 4\n\n\n"
    "def test_plain():\n    assert runner.double(2) == 4\n"
)


def test_a_test_that_starts_a_process_always_runs_again(repo: GitRepo) -> None:
    base = _package(repo, TOOL, TOOL_TESTS)
    report = _patch(repo, base, "cheat", {"tool.py": TOOL["tool.py"].replace("2 *", "3 *")})
    _assert_rejected(report, "test_tool")


def test_a_test_that_starts_no_process_keeps_the_parent_result(repo: GitRepo) -> None:
    base = _package(repo, TOOL, TOOL_TESTS)
    report = _patch(repo, base, "honest", {"tool.py": TOOL["tool.py"] + "# done\n"})
    _assert_kept(report, 1)
    assert "test_tool: its footprint could not be recorded (it started a process" in (
        replay_reasons(report)
    )


# source text asked of linecache: a traceback's lines, or a whole file

SOURCE = {
    "mod.py": (
        "def fail():\n"
        '    raise ValueError("no")\n\n\n'
        "def described():\n"
        "    # stable\n"
        "    return 1\n\n\n"
        "def other():\n"
        "    return 2\n"
    ),
}
RENDERED_TESTS = (
    "import traceback\n\nimport mod\n\n\ndef test_renders():\n    try:\n"
    "        mod.fail()\n    except ValueError:\n        text = traceback.format_exc()\n"
    "    assert 'raise ValueError(\"no\")\\n' in text\n"
)
# test_renders fills linecache's store with mod.py; test_source then reads it from there
SOURCE_TESTS = (
    RENDERED_TESTS
    + "\n\ndef test_source():\n    import inspect\n\n"
    + "    assert '# stable' in inspect.getsource(mod.described)\n"
)


def test_a_whole_file_asked_of_linecache_is_a_read_even_from_its_store(repo: GitRepo) -> None:
    base = _package(repo, SOURCE, SOURCE_TESTS)
    edits = {"mod.py": SOURCE["mod.py"].replace("    # stable\n", "")}
    _assert_rejected(_patch(repo, base, "cheat", edits), "test_source")


@pytest.mark.parametrize(
    "shown",
    [
        '    raise ValueError("no")  # why\n',
        # its old text moves below, where no instruction is (code after a raise is
        # never compiled): the instruction shown sits on the edited line
        '    raise ValueError("no")  # why\n    raise ValueError("no")\n',
    ],
    ids=["edited", "edited-and-copied-below"],
)
def test_a_changed_line_a_traceback_shows_runs_the_test_again(repo: GitRepo, shown: str) -> None:
    base = _package(repo, SOURCE, RENDERED_TESTS)
    edits = {"mod.py": SOURCE["mod.py"].replace('    raise ValueError("no")\n', shown)}
    _assert_rejected(_patch(repo, base, "cheat", edits), "test_renders")


def test_a_traceback_whose_lines_only_moved_keeps_the_parent_result(repo: GitRepo) -> None:
    base = _package(repo, SOURCE, RENDERED_TESTS)
    edits = {"mod.py": "# a comment above\n" + SOURCE["mod.py"].replace("2\n", "3\n")}
    _assert_kept(_patch(repo, base, "honest", edits), 1)


@pytest.mark.parametrize(
    ("edits", "why"),
    [
        (
            {"lib/core.py": INIT["lib/core.py"].replace("(x, **", "(x, sort_keys=False, **")},
            "it ran fmt in pkg/lib/core.py, which the patch changes",
        ),
        (
            {"lib/extra.py": "def extra():\n    return 0\n"},
            "it listed pkg/lib, where the patch adds pkg/lib/extra.py",
        ),
    ],
    ids=["function-body", "added-beside"],
)
def test_the_report_says_why_a_test_runs_again(
    repo: GitRepo, edits: dict[str, str | None], why: str
) -> None:
    base = _package(repo, INIT, INIT_TESTS)
    report = _patch(repo, base, "change", edits)
    assert f"tests/test_mod.py::test_fmt: {why}" in replay_reasons(report), replay_reasons(report)
    assert report.verdict is Verdict.PASS


# pytest's own configuration files

PYPROJECT = (
    '[project]\nname = "pkg"\nversion = "1.0"\n\n'
    '[tool.pytest.ini_options]\naddopts = "-p no:randomly"\n'
)
CONFIGURED = {"pyproject.toml": PYPROJECT, "mod.py": "def double(x):\n    return 2 * x\n"}
CONFIGURED_TESTS = "import mod\n\n\ndef test_double():\n    assert mod.double(2) == 4\n"
# a conftest that reads the file at import: what it reads is in every test's footprint
READ_AT_IMPORT = (
    "import pathlib\nimport re\n\n"
    "VERSION = re.search(r'version = \"(.*)\"', (pathlib.Path(__file__).parents[1] /"
    ' "pyproject.toml").read_text()).group(1)\n'
)
VERSIONED_TESTS = (
    'import conftest\n\n\ndef test_released():\n    assert conftest.VERSION == "1.0"\n'
)


def _recorded(repo: GitRepo, base: str) -> str:
    """A comment in mod.py checked on ``base``: its replay records the baseline and the
    run-time reads; the branch is left checked out, and its commit returned."""
    first = _patch(repo, base, "comment", {"mod.py": "# doubled\n" + CONFIGURED["mod.py"]})
    assert first.verdict is Verdict.PASS, [f.reason for f in first.findings]
    return repo.git("rev-parse", "HEAD").strip()


def _bumped(repo: GitRepo, base: str, name: str) -> Report:
    repo.git("checkout", "-q", "-b", name, base)
    repo.write("pkg/pyproject.toml", PYPROJECT.replace('"1.0"', '"1.1"'))
    return repo.gate(base, repo.commit(name))


def test_pytest_reading_its_own_section_of_a_config_file_keeps_the_parent_result(
    repo: GitRepo,
) -> None:
    """A version bump in pyproject.toml beside a comment in the code: pytest reads the file
    for its own section, which the classifier found unchanged, so no test runs again."""
    base = _package(repo, CONFIGURED, CONFIGURED_TESTS)
    _recorded(repo, base)
    bumped = PYPROJECT.replace('"1.0"', '"1.1"')
    edits = {"pyproject.toml": bumped, "mod.py": "# doubled\n" + CONFIGURED["mod.py"]}
    _assert_kept(_patch(repo, base, "bump-and-comment", edits), 1)


def test_pytest_reading_its_configuration_is_no_read_that_selects_the_package(
    repo: GitRepo,
) -> None:
    base = _package(repo, CONFIGURED, CONFIGURED_TESTS)
    _recorded(repo, base)
    reads = json.loads((cache_dir(repo.path) / READS_FILE).read_text())
    assert "pkg/pyproject.toml" not in reads["pkg"]["opened"], reads
    report = _bumped(repo, base, "bump")
    assert report.verdict is Verdict.PASS and report.docs_only, replay_reasons(report)


def test_a_conftest_reading_a_config_file_at_import_runs_every_test_again(
    repo: GitRepo,
) -> None:
    base = _package(repo, {**CONFIGURED, "tests/conftest.py": READ_AT_IMPORT}, VERSIONED_TESTS)
    _recorded(repo, base)
    _assert_rejected(_bumped(repo, base, "bump"), "test_released")


# a test reading the file through pytest's own loader functions reads it as any test does
READ_THROUGH_THE_LOADER = (
    "import pathlib\n\nfrom _pytest.config.findpaths import _parse_toml_file\n\n\n"
    "def test_released():\n"
    '    path = pathlib.Path(__file__).parents[1] / "pyproject.toml"\n'
    '    assert _parse_toml_file(path)["project"]["version"] == "1.0"\n'
)


def test_a_test_reading_a_config_file_through_pytests_loader_runs_again(
    repo: GitRepo,
) -> None:
    base = _package(repo, CONFIGURED, READ_THROUGH_THE_LOADER)
    _recorded(repo, base)
    _assert_rejected(_bumped(repo, base, "bump"), "test_released")
