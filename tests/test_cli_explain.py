"""``oracle-gate explain PATH``: lane, package, rows, rule, remedy, and a command that works."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gitrepo import GitRepo, oracle_gate_on_path, run
from oracle_gate.cli.explain import LANE_RULES
from oracle_gate.model import Lane, Verdict

FIXTURE = "libs/intervals/testdata/ranges/unsorted.json"


def _explain(repo: GitRepo, path: str, *args: str) -> dict[str, str]:
    done = run("explain", path, "--repo", str(repo.path), "--today", "2026-11-30", *args)
    assert done.returncode == 0, done.stderr
    fields: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(":")
        if not line.startswith(" "):
            fields[key] = value.strip()
    return fields


def test_every_lane_has_a_rule() -> None:
    assert set(LANE_RULES) == set(Lane)


def test_fixture_edit_is_explained_and_the_printed_command_makes_it_human_noted(
    example_repo: tuple[GitRepo, str], tmp_path: Path
) -> None:
    repo, base = example_repo
    repo.write(FIXTURE, "[[0, 1]]\n")
    repo.commit("agent: edit a fixture")
    fields = _explain(repo, FIXTURE, "--base", base)
    assert fields["package"] == "libs/intervals"
    assert fields["lane"].startswith("fixture: matches the package's 'fixtures' globs")
    assert fields["verdict"].startswith("reject (modified since")
    assert "records why in a human note" in fields["todo"]
    command = fields["command"].replace("<why>", "recorded case corrected, reviewed")
    assert command.startswith(f"oracle-gate note {FIXTURE} --reason ")
    env = oracle_gate_on_path(tmp_path / "bin")
    subprocess.run(["bash", "-c", command], cwd=repo.path, env=env, check=True, timeout=120)
    repo.commit("note the fixture")
    assert repo.judge_paths(base).verdict_of(FIXTURE) is Verdict.HUMAN_NOTED
    assert _explain(repo, FIXTURE, "--base", base)["verdict"].startswith("human_noted")


def test_unmeasured_module_names_no_row_and_the_matrix_to_edit(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write("libs/codec/codec_fast.py", "def f():\n    return 1\n")
    repo.commit("agent: add a module")
    fields = _explain(repo, "libs/codec/codec_fast.py", "--base", base)
    assert fields["rows"] == "(no row guards it)"
    assert fields["lane"].startswith("production:")
    assert fields["verdict"].startswith("reject (added since")
    assert "libs/codec/invariants.yaml" in fields["todo"]
    assert fields["command"] == "oracle-gate lock --write libs/codec"


def test_an_unchanged_guarded_path_needs_no_note(example_repo: tuple[GitRepo, str]) -> None:
    repo, _base = example_repo
    fields = _explain(repo, "libs/intervals/intervals/__init__.py")
    assert fields["rows"] == "merge_ranges_contract"
    assert fields["verdict"].startswith("(unchanged since")
    assert fields["todo"].startswith("no note: the rows that guard it run in check")


def test_a_path_outside_every_package_points_at_the_outside_setting(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, _base = example_repo
    fields = _explain(repo, "scripts/release.sh")
    assert fields["package"] == "(none: outside every package)"
    assert "'outside' in oracle-gate.toml" in fields["todo"]


def test_explain_agrees_with_check_on_every_path_of_a_patch(
    example_repo: tuple[GitRepo, str],
) -> None:
    repo, base = example_repo
    repo.write(FIXTURE, "[[0, 1]]\n")
    repo.write("libs/intervals/conftest.py", "import pytest\n")
    repo.append("libs/intervals/seeds.jsonl", "")
    repo.write("README.md", "docs\n")
    repo.write("libs/intervals/tests/test_new.py", "def test_x():\n    assert 1\n")
    repo.commit("agent: several paths")
    report = repo.judge_paths(base)
    assert len(report.paths) >= 4
    for entry in report.paths:
        fields = _explain(repo, entry.path, "--base", base)
        assert fields["lane"].split(":")[0] == entry.lane.value, entry.path
        assert fields["verdict"].split(" ")[0] == entry.verdict.value, entry.path


def test_explain_with_an_unknown_base_is_a_gate_error(example_repo: tuple[GitRepo, str]) -> None:
    repo, _base = example_repo
    done = run("explain", FIXTURE, "--repo", str(repo.path), "--base", "no-such-ref")
    assert done.returncode == 2
    assert "'no-such-ref' does not name a commit" in done.stderr
