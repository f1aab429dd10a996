"""Anything Python or pytest can load is production or harness wherever it lives, never docs
(bytecode, extension modules, archives, ``__pycache__``, ``.pth``, distribution metadata);
and tooling the root settings name is neither, while nothing imports it."""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Lane, Verdict
from reports import lane_and_verdict

PKG = "libs/intervals"
PYC = b"\xa7\r\r\n\x00\x00\x00\x00" + b"\x00" * 8 + b"\xe3" + b"\x00" * 32


@pytest.mark.parametrize(
    "path",
    [
        f"{PKG}/README_speedups.pyc",  # a README* name: Python imports it all the same
        f"{PKG}/docs/speedups.pyc",
        f"{PKG}/docs/__pycache__/conf.cpython-311.pyc",
        f"{PKG}/intervals/__pycache__/core.cpython-311.pyc",  # beside the code, unguarded
        f"{PKG}/docs/_speedups.cpython-311-x86_64-linux-gnu.so",
        f"{PKG}/docs/vendor.zip",
        f"{PKG}/README_vendor.egg",
        "docs/__pycache__/README.txt",
    ],
)
def test_compiled_code_is_never_docs(example_repo: tuple[GitRepo, str], path: str) -> None:
    repo, base = example_repo
    repo.write(path, PYC)
    report = repo.judge_paths(base, repo.commit("compiled code"))
    assert lane_and_verdict(report, path) == (Lane.PRODUCTION, Verdict.REJECT)
    assert "unmeasured module" in " ".join(f.reason for f in report.findings)


@pytest.mark.parametrize(
    "path",
    [f"{PKG}/README_speedups.md", f"{PKG}/docs/speedups.rst", "docs/README.txt"],
)
def test_the_docs_beside_them_stay_docs(example_repo: tuple[GitRepo, str], path: str) -> None:
    repo, base = example_repo
    repo.write(path, "speedups\n")
    report = repo.gate(base, repo.commit("docs"))
    assert lane_and_verdict(report, path) == (Lane.DOCS, Verdict.PASS)
    assert report.verdict is Verdict.PASS


@pytest.mark.parametrize(
    "path",
    [
        f"{PKG}/tests/__pycache__/helpers.cpython-311.pyc",  # an unchecked pyc replaces helpers.py
        f"{PKG}/tests/_fast.cpython-311-x86_64-linux-gnu.so",
        f"{PKG}/tests/vendored.zip",
        f"{PKG}/docs/site.pth",
        f"{PKG}/quiet.dist-info/entry_points.txt",  # importlib.metadata reads it: pytest11
        "tools/quiet.egg-info/entry_points.txt",
    ],
)
def test_loadable_files_on_the_tests_side_or_that_register_plugins_are_harness(
    example_repo: tuple[GitRepo, str], path: str
) -> None:
    repo, base = example_repo
    repo.write(path, PYC if not path.endswith((".txt", ".pth")) else "[pytest11]\nq = quiet\n")
    report = repo.judge_paths(base, repo.commit("loadable"))
    assert lane_and_verdict(report, path) == (Lane.HARNESS, Verdict.REJECT)


def test_a_new_data_file_in_the_tests_stays_an_agent_test(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    path = f"{PKG}/tests/cases.json"
    repo.write(path, "[]\n")
    report = repo.judge_paths(base, repo.commit("test data"))
    assert lane_and_verdict(report, path) == (Lane.AGENT_TEST, Verdict.IGNORED_AS_ORACLE)


def test_compiled_code_a_row_guards_is_production_and_selects_the_row(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = example_repo
    repo.replace(f"{PKG}/invariants.yaml", '"intervals/**/*.py"', '"intervals/**"')
    repo.relock(PKG)
    base = repo.commit("the row guards every file of the source folder")
    path = f"{PKG}/intervals/_speedups.cpython-311-x86_64-linux-gnu.so"
    repo.write(path, PYC)
    report = repo.judge_paths(base, repo.commit("an extension module"))
    assert lane_and_verdict(report, path) == (Lane.PRODUCTION, Verdict.PASS)
    assert "guarded by row(s) merge_ranges_contract" in report.findings[0].reason


HELPER = '"""Switch the build backend."""\n\n\ndef use_setuptools():\n    return 1\n'


def _tooling_repo(example_repo: tuple[GitRepo, str]) -> tuple[GitRepo, str]:
    repo, _ = example_repo
    repo.write("oracle-gate.toml", f'tooling = ["{PKG}/scripts/**", "{PKG}/docs/conf.py"]\n')
    repo.write(f"{PKG}/scripts/use_setuptools.py", HELPER)
    repo.write(f"{PKG}/docs/conf.py", 'project = "intervals"\n')
    return repo, repo.commit("tooling")


@pytest.mark.parametrize(
    "path", [f"{PKG}/scripts/use_setuptools.py", f"{PKG}/docs/conf.py", f"{PKG}/scripts/release.sh"]
)
def test_tooling_the_parent_settings_name_is_other_and_merges(
    example_repo: tuple[GitRepo, str], path: str
) -> None:
    repo, base = _tooling_repo(example_repo)
    repo.write(path, "# edited\nx = 2\n")
    report = repo.gate(base, repo.commit("edit a build helper"))
    assert lane_and_verdict(report, path) == (Lane.OTHER, Verdict.PASS)
    assert report.verdict is Verdict.PASS


def test_tooling_module_that_production_imports_is_production(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _ = _tooling_repo(example_repo)
    repo.append(f"{PKG}/intervals/__init__.py", "\nfrom scripts import use_setuptools\n")
    base = repo.commit("production now imports the helper (a guarded change)")
    path = f"{PKG}/scripts/use_setuptools.py"
    repo.replace(path, "return 1", "return 2")
    report = repo.judge_paths(base, repo.commit("change the helper"))
    assert lane_and_verdict(report, path) == (Lane.PRODUCTION, Verdict.REJECT)


def test_tooling_globs_a_patch_adds_do_not_count(example_repo: tuple[GitRepo, str]) -> None:
    repo, base = example_repo
    repo.write("oracle-gate.toml", f'tooling = ["{PKG}/scripts/**"]\n')
    repo.write(f"{PKG}/scripts/use_setuptools.py", HELPER)
    report = repo.judge_paths(base, repo.commit("a helper and the glob that frees it"))
    assert lane_and_verdict(report, f"{PKG}/scripts/use_setuptools.py") == (
        Lane.PRODUCTION,
        Verdict.REJECT,
    )


@pytest.mark.parametrize(
    "path", ["MANIFEST.in", f"{PKG}/MANIFEST.in", ".github/dependabot.yml", ".readthedocs.yaml"]
)
def test_packaging_and_hosting_files_are_other(
    example_repo: tuple[GitRepo, str], path: str
) -> None:
    repo, base = example_repo
    repo.write(path, "include README.md\n")
    report = repo.gate(base, repo.commit("packaging"))
    assert lane_and_verdict(report, path) == (Lane.OTHER, Verdict.PASS)


def test_tooling_module_that_binds_pytest_hooks_is_harness(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = _tooling_repo(example_repo)
    path = f"{PKG}/scripts/use_setuptools.py"
    repo.append(path, "\n\ndef pytest_collection_modifyitems(items):\n    items.clear()\n")
    report = repo.judge_paths(base, repo.commit("a hook in a build helper"))
    assert lane_and_verdict(report, path) == (Lane.HARNESS, Verdict.REJECT)
