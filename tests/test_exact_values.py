"""Values cross the split as exact builtins: a subclass's data is read through the builtin's
own implementation, and an exception is what its class really is, not what it claims."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from gitrepo import GitRepo
from oracle_gate.model import Verdict
from oracle_gate.runtime.canonical import encode
from reports import replay_reasons


class _LyingStr(str):
    def __str__(self) -> str:
        return "right"


class _LyingFloat(float):
    def __float__(self) -> float:
        return 1.5

    def __repr__(self) -> str:
        return "1.5"


class _LyingDict(dict[str, int]):
    def keys(self) -> Any:
        return ["right"]

    def __iter__(self) -> Any:
        return iter(["right"])

    def items(self) -> Any:
        return [("right", 1)]


class _LyingList(list[int]):
    def __iter__(self) -> Any:
        return iter([1])


class _LyingBytes(bytes):
    def __bytes__(self) -> bytes:
        return b"right"


class _LyingInt(int):
    def __int__(self) -> int:
        return 1

    def __index__(self) -> int:
        return 1


class _ClaimsToBeStr:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return str


class _Color(str, enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    ("value", "crosses_as"),
    [
        (_LyingStr("wrong"), ["str", "wrong"]),
        (_LyingFloat(2.5), ["float", "2.5"]),
        (_LyingDict(wrong=2), ["dict", [[["str", "wrong"], ["int", "2"]]]]),
        (_LyingList([1, 2]), ["list", [["int", "1"], ["int", "2"]]]),
        (_LyingBytes(b"wrong"), ["bytes", b"wrong".hex()]),
        (_LyingInt(2), ["int", "2"]),
        (_Color.RED, ["str", "red"]),  # the honest neighbour: a str enum is its str
        (enum.IntEnum("N", "ONE TWO").TWO, ["int", "2"]),
    ],
    ids=["str", "float", "dict", "list", "bytes", "int", "str-enum", "int-enum"],
)
def test_a_subclass_of_a_builtin_crosses_as_the_data_it_holds(
    value: object, crosses_as: Any
) -> None:
    assert encode(value, plain=True) == crosses_as


def test_an_object_claiming_a_builtin_class_is_not_plain_data() -> None:
    with pytest.raises(ValueError, match="is not plain data"):
        encode(_ClaimsToBeStr(), plain=True)


ROW = (
    'version: 1\ntests: ["tests/test_*.py"]\nrows:\n  - id: r\n    globs: ["mod.py"]\n'
    "    budget: {seconds: 30}\n"
)
TESTS = """\
import pytest

from mod import name, check


def test_name():
    assert name() == "right"


def test_check():
    with pytest.raises(ValueError):
        check(-1)
"""
PARENT = """\
def name():
    return "right"


def check(x):
    if x < 0:
        raise ValueError("negative")
    return x
"""


def _base(repo: GitRepo) -> str:
    repo.write("pkg/invariants.yaml", ROW)
    repo.write("pkg/flake_freeze.yaml", "frozen: []\nbudget: 2\n")
    repo.write("oracle-gate.toml", "timeout-floor = 1\n")
    repo.write("pkg/mod.py", PARENT)
    repo.write("pkg/tests/test_mod.py", TESTS)
    repo.relock("pkg")
    return repo.commit("package")


LYING_NAME = PARENT.replace(
    'def name():\n    return "right"\n',
    "class _Text(str):\n    def __str__(self):\n        return 'right'\n\n\n"
    'def name():\n    return _Text("wrong")\n',
)
HONEST_NAME = PARENT.replace(
    'def name():\n    return "right"\n',
    "import enum\n\n\nclass _Text(str, enum.Enum):\n    RIGHT = 'right'\n\n\n"
    "def name():\n    return _Text.RIGHT\n",
)
CLAIMED_ERROR = PARENT.replace(
    '        raise ValueError("negative")\n',
    '        raise _Claimed("negative")\n',
) + (
    "\n\nclass _Claimed(LookupError):\n"
    "    __module__ = 'builtins'\n    __qualname__ = 'ValueError'\n"
)
HONEST_ERROR = (
    PARENT.replace(
        '        raise ValueError("negative")\n', '        raise NegativeError("negative")\n'
    )
    + "\n\nclass NegativeError(ValueError):\n    pass\n"
)


@pytest.mark.parametrize(
    ("code", "nodeid"),
    [(LYING_NAME, "test_name"), (CLAIMED_ERROR, "test_check")],
    ids=["str-subclass-showing-the-right-value", "exception-claiming-to-be-ValueError"],
)
def test_a_value_or_exception_that_lies_about_itself_is_a_regress(
    repo: GitRepo, code: str, nodeid: str
) -> None:
    base = _base(repo)
    repo.write("pkg/mod.py", code)
    report = repo.gate(base, repo.commit("lies"))
    assert f"replay regress: tests/test_mod.py::{nodeid} passes" in replay_reasons(report), (
        replay_reasons(report)
    )
    assert report.verdict is Verdict.REJECT


@pytest.mark.parametrize(
    "code", [HONEST_NAME, HONEST_ERROR], ids=["str-enum", "ValueError-subclass"]
)
def test_an_honest_subclass_of_a_builtin_passes(repo: GitRepo, code: str) -> None:
    base = _base(repo)
    repo.write("pkg/mod.py", code)
    report = repo.gate(base, repo.commit("honest"))
    assert report.verdict is Verdict.PASS, [f.reason for f in report.findings]
