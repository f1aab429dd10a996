"""The tamper rule: a production change must not add references to test or gate machinery.

Each cheating patch below would pass the properties by behaving differently under
test; each is rejected from the git objects alone. Its honest neighbour passes.
"""

from __future__ import annotations

import pytest

from gitrepo import GitRepo
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
    """Strict always (no sniffing), inspect.signature, words that merely contain 'test'."""
    repo, base = example_repo
    repo.replace(CODEC, '"""A tiny', '"""The latest tiny')
    _prepend(repo, CODEC, "import inspect\n")
    repo.replace(
        CODEC,
        "        if key in record:\n",
        "        if key in record and inspect.signature(decode) is not None:\n",
    )
    repo.replace(MERGE, "    merged = []\n", "    merged = []  # attested: contest-free\n")
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
