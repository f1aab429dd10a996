"""``oracle-gate propose``: assumption rows drafted from the diff, each rule with a neighbour.

Every rule has a patch where it must propose and an honest neighbour where it
must stay quiet. The command tests run on the example monorepo: what is
written, where, with which status, and what the discard rule drops.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from gitrepo import TODAY, GitRepo
from oracle_gate.cli import main
from oracle_gate.config.ledgers import parse_assumptions
from oracle_gate.gate import check
from oracle_gate.model import Matrix, Package, Verdict
from oracle_gate.propose.changes import changed_functions
from oracle_gate.propose.rules import RULES, Proposal

PACKAGE = Package(path="", matrix=Matrix(owners=(), tests=(), fixtures=(), deps=(), rows=()))

# rule -> (parent, head where it proposes, neighbour where it must not)
RULE_CASES: dict[str, tuple[str, str, str]] = {
    "removed_sort": (
        "def f(xs):\n    out = []\n    for x in sorted(xs):\n"
        "        out.append(x)\n    return out\n",
        "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x)\n    return out\n",
        # the sort moved to the caller: the file still sorts as often
        "def f(xs):\n    out = []\n    for x in xs:\n        out.append(x)\n    return out\n\n\n"
        "def g(xs):\n    return f(sorted(xs))\n",
    ),
    "removed_presence_check": (
        "def f(x):\n    if x is None:\n        return 0\n    return x + 1\n",
        "def f(x):\n    return x + 1\n",
        # the None check replaced by a type check
        "def f(x):\n    if not isinstance(x, int):\n        return 0\n    return x + 1\n",
    ),
    "new_index": (
        "def f(xs):\n    return xs\n",
        "def f(xs):\n    return xs[0]\n",
        "def f(xs):\n    if not xs:\n        return None\n    return xs[0]\n",
    ),
    "new_dict": (
        "def f(pairs):\n    return list(pairs)\n",
        "def f(pairs):\n    return dict(pairs)\n",
        "def f(pairs):\n    return dict(a=1, b=list(pairs))\n",
    ),
    "naive_datetime": (
        "import datetime\n\n\ndef f(start):\n    return start\n",
        "import datetime\n\n\ndef f(start):\n    return start + datetime.timedelta(days=1)\n",
        "import datetime\n\n\ndef f(start):\n"
        "    return start.astimezone(datetime.timezone.utc) + datetime.timedelta(days=1)\n",
    ),
    "removed_raise": (
        "def f(x):\n    if x < 0:\n        raise ValueError(x)\n    return x\n",
        "def f(x):\n    return x\n",
        # the message changed, the refusal stays
        "def f(x):\n    if x < 0:\n        raise ValueError(f'negative: {x}')\n    return x\n",
    ),
    "narrowed_except": (
        "def f(s):\n    try:\n        return int(s)\n    except (ValueError, TypeError):\n"
        "        return None\n",
        "def f(s):\n    try:\n        return int(s)\n    except ValueError:\n        return None\n",
        "def f(s):\n    try:\n        return int(s)\n"
        "    except (ValueError, TypeError, OverflowError):\n        return None\n",
    ),
}

EXPECTED = {
    "removed_sort": ("-", 3, "xs is already sorted"),
    "removed_presence_check": ("-", 2, "x is never None or empty"),
    "new_index": ("+", 2, "xs is never empty"),
    "new_dict": ("+", 2, "keys m.f builds a dict from are unique"),
    "naive_datetime": ("+", 5, "datetimes m.f computes with are naive"),
    "removed_raise": ("-", 2, "never given input where x < 0"),
    "narrowed_except": ("+", 4, "does not meet TypeError"),
}


def _proposals(rule: str, parent: str, head: str) -> list[Proposal]:
    found = []
    for changed in changed_functions(PACKAGE, "m.py", parent, head):
        found += RULES[rule](changed)
    return found


@pytest.mark.parametrize("rule", sorted(RULE_CASES))
def test_each_rule_proposes_on_its_patch(rule: str) -> None:
    parent, head, _ = RULE_CASES[rule]
    side, line, words = EXPECTED[rule]
    (proposal,) = _proposals(rule, parent, head)
    assert (proposal.side, proposal.line) == (side, line)
    assert words in proposal.precondition


@pytest.mark.parametrize("rule", sorted(RULE_CASES))
def test_each_rule_stays_quiet_on_its_honest_neighbour(rule: str) -> None:
    parent, _, neighbour = RULE_CASES[rule]
    assert _proposals(rule, parent, neighbour) == []


def test_an_unchanged_or_reformatted_function_proposes_nothing() -> None:
    parent = "def f(xs):\n    return sorted(xs)[0]\n"
    assert changed_functions(PACKAGE, "m.py", parent, parent.replace("    ", "  ")) == []


# --- the command, on the example monorepo -----------------------------------------------

INTERVALS = "libs/intervals"
MODULE = f"{INTERVALS}/intervals/__init__.py"
REGISTER = f"{INTERVALS}/assumptions.yaml"


@pytest.fixture
def patched(example_repo: tuple[GitRepo, str]) -> tuple[GitRepo, str]:
    """An agent patch that drops the sort and the inverted-range check of merge_ranges."""
    repo, base = example_repo
    repo.replace(MODULE, "sorted(ranges)", "ranges")
    refusal = '            raise ValueError(f"inverted range [{start}, {end}]")\n'
    repo.replace(MODULE, "        if start > end:\n" + refusal, "")
    repo.commit("agent: faster merge")
    return repo, base


def _propose(repo: GitRepo, base: str, *more: str) -> int:
    return main(["propose", "--repo", str(repo.path), "--base", base, *more])


def test_propose_writes_proposed_rows_with_symbol_and_quoted_evidence(
    patched: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = patched
    assert _propose(repo, base) == 0
    items = parse_assumptions((repo.path / REGISTER).read_bytes(), REGISTER)
    new = [item.data for item in items if item.id != "A001"]
    assert [(i["id"], i["symbol"], i["status"]) for i in new] == [
        ("A002", "intervals.merge_ranges", "proposed"),
        ("A003", "intervals.merge_ranges", "proposed"),
    ]
    assert new[0]["evidence"] == f"{MODULE}:7: -    for start, end in sorted(ranges):"
    assert new[1]["evidence"] == f"{MODULE}:8: -        if start > end:"
    assert "ranges is already sorted" in new[0]["precondition"]
    # only the touched package's register was written
    assert repo.git("status", "--porcelain").split() == ["M", REGISTER]
    assert "proposed libs/intervals/assumptions.yaml: A002" in capsys.readouterr().out
    assert _propose(repo, base) == 0  # a second run adds nothing
    assert len(parse_assumptions((repo.path / REGISTER).read_bytes(), REGISTER)) == 3


def test_proposed_rows_fail_check_until_a_human_reviews_them(
    patched: tuple[GitRepo, str],
) -> None:
    repo, base = patched
    _propose(repo, base)
    repo.commit("proposed assumptions")
    report = check(repo.path, base=base, head="HEAD", today=TODAY, run_rows=False)
    assert report.verdict_of(REGISTER) is Verdict.REJECT
    assert any("proposed" in f.reason for f in report.findings if f.path == REGISTER)
    text = repo.read(REGISTER).replace("status: proposed", "status: rejected")
    repo.write(REGISTER, text)
    repo.commit("reviewed: rejected")
    report = check(repo.path, base=base, head="HEAD", today=TODAY, run_rows=False)
    assert not any("proposed" in f.reason for f in report.findings if f.path == REGISTER)


@pytest.mark.parametrize("variable", [("CI", "true"), ("ORACLE_GATE_ROLE", "agent")])
def test_propose_is_refused_in_ci_and_to_agents(
    patched: tuple[GitRepo, str],
    variable: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    repo, base = patched
    monkeypatch.setenv(*variable)
    assert _propose(repo, base) == 2
    assert "propose is refused" in capsys.readouterr().err
    assert repo.git("status", "--porcelain") == ""


def _proposer(tmp_path: Path, items: list[dict[str, str]]) -> str:
    script = tmp_path / "proposer.py"
    script.write_text(
        "import sys\n"
        "diff = sys.stdin.read()\n"
        "assert 'sorted(ranges)' in diff\n"
        f"print({yaml.safe_dump(items)!r})\n"
    )
    return f"{sys.executable} {script}"


def test_an_external_proposer_goes_through_the_same_schema_and_discard_rule(
    patched: tuple[GitRepo, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = patched
    quote = "for start, end in sorted(ranges):"
    command = _proposer(
        tmp_path,
        [
            {
                "symbol": "intervals.merge_ranges",
                "precondition": "no range is empty",
                "evidence": quote,
                "status": "accepted",  # never taken: only a human accepts
            },
            {"symbol": "intervals.nowhere", "precondition": "x", "evidence": quote},
            {
                "symbol": "intervals.merge_ranges",
                "precondition": "y",
                "evidence": "not in the diff",
            },
        ],
    )
    assert _propose(repo, base, "--proposer", command) == 0
    items = {
        i.data["precondition"]: i for i in parse_assumptions(repo.read(REGISTER).encode(), REGISTER)
    }
    assert items["no range is empty"].status == "proposed"
    assert "x" not in items and "y" not in items
    out = capsys.readouterr().out
    assert (
        "discarded intervals.nowhere (proposer): symbol 'intervals.nowhere' does not resolve" in out
    )
    assert "discarded intervals.merge_ranges (proposer): its evidence quotes no line" in out


def test_a_proposer_that_prints_no_yaml_list_is_an_error(
    patched: tuple[GitRepo, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = patched
    script = tmp_path / "bad.py"
    script.write_text("print('- [unclosed')\n")
    assert _propose(repo, base, "--proposer", f"{sys.executable} {script}") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "printed output that is not YAML" in err
    assert repo.git("status", "--porcelain") == ""


def test_a_broken_register_is_reported_and_never_overwritten(
    patched: tuple[GitRepo, str], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, base = patched
    broken = "version: 1\nitems:\n  - symbol: intervals.merge_ranges\n"
    repo.write(REGISTER, broken)
    assert _propose(repo, base) == 2
    assert f"{REGISTER}:3: assumption has no id" in capsys.readouterr().err
    assert repo.read(REGISTER) == broken
