"""The replay's baseline: computed once per parent, kept in the user cache or a shared HTTP
cache, verified before use; a corrupt or forged entry is a miss, never a pass. And the
replay's own time budget, which property budgets never limit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gitrepo import TODAY, GitRepo
from oracle_gate.config.matrix import parse_matrix
from oracle_gate.config.settings import read_settings
from oracle_gate.errors import ConfigError
from oracle_gate.gate import check
from oracle_gate.model import Verdict
from oracle_gate.repo.cache import cache_dir
from oracle_gate.repo.trees import GitTree
from oracle_gate.report import Report
from oracle_gate.runtime import baseline as baseline_module
from oracle_gate.runtime.health import HEALTH_FILE
from reports import replay_reasons
from webdav import webdav_server

# Read at import: tests/conftest.py unsets CI while tests run.
IN_CI = bool(os.environ.get("CI"))
ROW = (
    'version: 1\ntests: ["tests/test_*.py"]\nrows:\n  - id: r\n    globs: ["**"]\n'
    "    budget: {seconds: 1}\n"
)
MOD = "def double(x):\n    return 2 * x\n\n\ndef triple(x):\n    return 3 * x\n"
TESTS = (
    "from mod import double, triple\n\n\ndef test_double():\n    assert double(2) == 4\n\n\n"
    "def test_triple():\n    assert triple(2) == 6\n"
)
BROKEN = MOD.replace("return 2 * x", "return 2 * x + 1")
HONEST = MOD.replace("return 3 * x", "return x * 3")


def _base(repo: GitRepo, tests: str = TESTS, settings: str = "") -> str:
    repo.write("pkg/invariants.yaml", ROW)
    repo.write("pkg/flake_freeze.yaml", "frozen: []\nbudget: 2\n")
    repo.write("oracle-gate.toml", "timeout-floor = 1\n" + settings)
    repo.write("pkg/mod.py", MOD)
    repo.write("pkg/tests/test_mod.py", tests)
    repo.relock("pkg")
    return repo.commit("package")


def _patch(repo: GitRepo, base: str, name: str, code: str, cache_url: str | None = None) -> Report:
    repo.git("checkout", "-q", "-b", name, base)
    repo.write("pkg/mod.py", code)
    head = repo.commit(name)
    return check(repo.path, base, head, TODAY, cache_url=cache_url)


def _baseline_source(repo: GitRepo) -> str | None:
    """Where the last check's baseline of pkg came from, as its health record says."""
    last = (cache_dir(repo.path) / HEALTH_FILE).read_text().splitlines()[-1]
    source: str | None = json.loads(last)["replays"]["pkg"]["baseline"]
    return source


def _entries(xdg: Path) -> list[Path]:
    return sorted((xdg / "oracle-gate" / "baselines").glob("*.json"))


@pytest.fixture
def xdg(tmp_path: Path) -> Path:
    """The user cache tests/conftest.py gives every test."""
    return tmp_path / "xdg-cache"


def test_a_second_patch_on_the_same_parent_takes_the_baseline_from_the_cache(
    repo: GitRepo, xdg: Path
) -> None:
    base = _base(repo)
    assert _patch(repo, base, "one", HONEST).verdict is Verdict.PASS
    assert _baseline_source(repo) == "recorded"
    assert len(_entries(xdg)) == 1
    second = _patch(repo, base, "two", BROKEN)
    assert "replay regress: tests/test_mod.py::test_double" in replay_reasons(second)
    third = _patch(repo, base, "three", HONEST.replace("x * 3", "3 * x  # same"))
    assert third.verdict is Verdict.PASS
    assert _baseline_source(repo) == "cached"
    assert len(_entries(xdg)) == 1


def _honest_then(repo: GitRepo, xdg: Path, tamper: str) -> tuple[str, Path]:
    """A recorded baseline for ``base`` (the honest patch ran), then its entry ``tamper``ed:
    ``garbage``, ``forged`` (test_double's footprint emptied: a kept test, if believed) or
    ``resealed`` (forged, then sealed again as a writer without the secret would)."""
    base = _base(repo)
    assert _patch(repo, base, "honest", HONEST).verdict is Verdict.PASS
    (entry,) = _entries(xdg)
    if tamper == "garbage":
        entry.write_text('{"key": ')
        return base, entry
    document = json.loads(entry.read_text())
    tests = document["footprints"]["tests"]
    tests["tests/test_mod.py::test_double"] = {
        "lines": {},
        "opened": [],
        "configured": [],
        "rendered": {},
        "listed": [],
        "unrecorded": "",
    }
    document["footprints"]["session"] = {
        "lines": {},
        "opened": [],
        "configured": [],
        "rendered": {},
        "listed": [],
        "unrecorded": "",
    }
    if tamper == "resealed":
        document["seal"] = baseline_module._seal(baseline_module._body(document))
    entry.write_text(json.dumps(document))
    return base, entry


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        ("garbage", "it does not decode"),
        ("forged", "its seal does not match"),
    ],
)
def test_a_corrupt_or_forged_entry_is_a_miss_never_a_pass(
    repo: GitRepo, xdg: Path, tamper: str, why: str
) -> None:
    base, _ = _honest_then(repo, xdg, tamper)
    report = _patch(repo, base, "cheat", BROKEN)
    reasons = replay_reasons(report)
    assert "replay regress: tests/test_mod.py::test_double" in reasons
    assert report.verdict is Verdict.REJECT
    note = next(f.reason for f in report.findings if "ignored" in f.reason)
    assert f"ignored: {why}" in note, note


def test_a_forged_entry_sealed_again_is_a_miss_where_a_secret_keys_the_seal(
    repo: GitRepo, xdg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Who holds no secret cannot seal an entry the gate takes."""
    monkeypatch.setenv("ORACLE_GATE_CACHE_SECRET", "only-the-gate's-machines")
    base = _base(repo)
    assert _patch(repo, base, "honest", HONEST).verdict is Verdict.PASS
    (entry,) = _entries(xdg)
    document = json.loads(entry.read_text())
    assert document["seal"].startswith("keyed ")
    document["footprints"]["tests"]["tests/test_mod.py::test_double"]["lines"] = {}
    document["footprints"]["session"]["lines"] = {}
    monkeypatch.delenv("ORACLE_GATE_CACHE_SECRET")
    document["seal"] = baseline_module._seal(baseline_module._body(document))
    entry.write_text(json.dumps(document))
    monkeypatch.setenv("ORACLE_GATE_CACHE_SECRET", "only-the-gate's-machines")
    report = _patch(repo, base, "cheat", BROKEN)
    assert "replay regress: tests/test_mod.py::test_double" in replay_reasons(report)
    note = next(f.reason for f in report.findings if "ignored" in f.reason)
    assert "its seal does not match (unkeyed" in note


def test_an_entry_of_another_parent_is_a_miss(repo: GitRepo, xdg: Path) -> None:
    """The entry of one parent put where another parent's key points: its inputs differ."""
    first = _base(repo)
    assert _patch(repo, first, "a", HONEST).verdict is Verdict.PASS
    (old,) = _entries(xdg)
    repo.git("checkout", "-q", "main")
    repo.write("pkg/tests/test_mod.py", TESTS + "\n\ndef test_more():\n    assert double(0) == 0\n")
    repo.relock("pkg")
    second = repo.commit("another parent")
    assert _patch(repo, second, "b", HONEST).verdict is Verdict.PASS
    new = next(path for path in _entries(xdg) if path != old)
    new.write_bytes(old.read_bytes())
    report = _patch(repo, second, "c", BROKEN)
    assert "replay regress: tests/test_mod.py::test_double" in replay_reasons(report)
    note = next(f.reason for f in report.findings if "ignored" in f.reason)
    assert "ignored: it was recorded for other inputs" in note


def test_the_shared_cache_serves_a_second_machine(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with webdav_server(tmp_path / "nginx", required=IN_CI) as (url, storage):
        base = _base(repo)
        assert _patch(repo, base, "one", HONEST, cache_url=url).verdict is Verdict.PASS
        assert _baseline_source(repo) == "recorded"
        assert list(storage.rglob("*.json"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-machine"))
        second = _patch(repo, base, "two", HONEST.replace("x * 3", "x * 3  # same"), url)
        assert _baseline_source(repo) == "cached"
        assert second.verdict is Verdict.PASS


def test_a_property_budget_never_limits_the_replay(repo: GitRepo) -> None:
    """The row's budget is 1 s; each test takes 1.5 s on either side: the replay's budget
    is its own, derived from the parent's baseline, and says so."""
    slow = (
        "import time\n\nfrom mod import double, triple\n\n\n"
        "def test_double():\n    time.sleep(1.5)\n    assert double(2) == 4\n\n\n"
        "def test_triple():\n    time.sleep(1.5)\n    assert triple(2) == 6\n"
    )
    base = _base(repo, slow)
    report = _patch(repo, base, "honest", MOD.replace("return 2 * x", "return x * 2"))
    reasons = replay_reasons(report)
    assert "also pass on the head's code" in reasons
    assert "budget: 5x the parent's baseline plus 60s" in reasons
    assert report.verdict is Verdict.PASS


@pytest.mark.parametrize("value", ["0", "-1", '"fast"', "true", "100000"])
def test_a_replay_budget_that_is_not_a_number_of_seconds_is_a_config_error(
    repo: GitRepo, value: str
) -> None:
    repo.write("oracle-gate.toml", f"timeout-floor = 1\nreplay-seconds = {value}\n")
    with pytest.raises(ConfigError) as caught:
        read_settings(GitTree(repo.path, repo.commit("settings")))
    assert "'replay-seconds' must be a number of seconds in (0, 86400]" in str(caught.value)
    assert caught.value.line == 2


def test_the_packages_replay_budget_is_the_parents(repo: GitRepo) -> None:
    """``replay: {seconds: 10}`` in the parent's invariants.yaml bounds the replay; the head
    raising it changes nothing (a patch never sets the budget it is judged by)."""
    _base(repo)
    repo.write("pkg/invariants.yaml", ROW + "replay: {seconds: 10}\n")
    repo.relock("pkg")
    base = repo.commit("a replay budget")
    repo.git("checkout", "-q", "-b", "slow", base)
    repo.write("pkg/invariants.yaml", ROW + "replay: {seconds: 900}\n")
    slow = "    import time\n\n    time.sleep(60)\n    return 2 * x"
    repo.write("pkg/mod.py", MOD.replace("    return 2 * x", slow))
    repo.relock("pkg")
    report = check(repo.path, base, repo.commit("slow"), TODAY)
    reasons = replay_reasons(report)
    assert "replay stopped at the package's time budget (10s) on the head's code" in reasons
    assert "the budget is replay: {seconds} in pkg/invariants.yaml" in reasons


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{seconds: 0}", "replay seconds must be in (0, 86400], found 0"),
        ("{seconds: fast}", "replay seconds must be a number"),
        ("{}", "replay must give seconds"),
        ("600", "replay must be a mapping"),
        ("{seconds: 5, examples: 3}", "unknown key 'examples' in replay"),
    ],
)
def test_a_packages_replay_budget_that_is_not_seconds_is_a_config_error(
    value: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_matrix((ROW + f"replay: {value}\n").encode(), "pkg/invariants.yaml")
    assert message in str(caught.value)
    assert caught.value.line == 7
