"""The README's walkthrough runs as written, and it describes the two commands truthfully."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from gitrepo import oracle_gate_on_path
from oracle_gate.cli.demo import PATCHES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block(heading: str, language: str) -> str:
    section = README.split(f"## {heading}\n", 1)[1]
    found = re.search(rf"```{language}\n(.*?)```", section, re.DOTALL)
    assert found is not None, heading
    return found.group(1)


def _run_block(heading: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The ``sh`` block under ``heading``, run by bash -e in ``tmp_path`` as a user would."""
    env = oracle_gate_on_path(tmp_path / "bin")
    for who in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{who}_NAME"] = "readme"
        env[f"GIT_{who}_EMAIL"] = "readme@example.com"
    env.update(GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    done = subprocess.run(
        ["bash", "-e", "-c", _block(heading, "sh")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_walkthrough_init_property_lock_check_runs_as_written(tmp_path: Path) -> None:
    done = _run_block("Walkthrough: a fresh repository", tmp_path)
    out = done.stdout
    assert "1 row(s), 1 property stub(s)" in out
    assert "wrote libs/geo/oracle_gate.lock" in out
    merge, _, reject = out.partition("rejected with exit")
    assert "verdict: MERGE" in merge  # step 4: the honest refactor
    assert reject.startswith(" 1")
    assert "lane:    test:" in reject and "oracle-gate note libs/geo/tests/test_area.py" in reject


def test_quick_start_for_a_single_package_library_runs_as_written(tmp_path: Path) -> None:
    out = _run_block("Quick start for a real repository", tmp_path).stdout
    assert "1 row(s), 2 property stub(s)" in out
    assert "wrote oracle_gate.lock" in out
    assert "verdict: MERGE" in out
    settings = (tmp_path / "spans" / "oracle-gate.toml").read_text(encoding="utf-8")
    assert 'tooling = [\n    "docs/**",\n]' in settings
    lanes = {
        line.split()[0]: line.split()[1] for line in out.splitlines() if line.endswith(" pass")
    }
    assert lanes["docs/conf.py"] == "other" and lanes["pyproject.toml"] == "other"
    assert lanes["src/spans/_merge.py"] == "production"


def test_the_two_commands_are_what_ci_runs_and_the_demo_count_is_true() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_command = re.search(r'README_TEST_COMMAND="(.*)"', ci)
    assert test_command is not None
    assert f"```sh\n{test_command.group(1)}\n```" in README
    assert "```sh\npython3 -m pip install . && oracle-gate demo\n```" in README
    assert f"applies {len(PATCHES)} sample agent patches" in README
