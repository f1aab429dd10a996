"""lanes/tamper/: each mark family's cheats show its mark, its honest neighbours none.

The cases are read from tests/fixtures/tamper/marks/FAMILY.py, one file per family of
``registry.FAMILIES`` (the format: tests/fixture_cases.py). A cheat's header names the
mark it must show as the lane's reason shows it (``reference 'os.write'``). Each case is
a production module's whole text, read by the families' reader with no parent side: no
repository, no ledger, only what the file's ``# recorded:`` and ``# fixture:`` lines say
the package holds. Shadows are paths, not text: their cases list the files the patch
adds and the parent had.
"""

from __future__ import annotations

import importlib
import json
import re

import pytest

from fixture_cases import FIXTURES, Case, read_cases
from oracle_gate.lanes.recorded import Recorded
from oracle_gate.lanes.tamper import added_marks
from oracle_gate.lanes.tamper.registry import FAMILIES
from oracle_gate.lanes.tamper.shadows import new_shadow
from oracle_gate.model import Matrix, Package

MARKS = FIXTURES / "tamper" / "marks"
_RECORDED = re.compile(r"^# recorded: ([^:]+): (.+)$", re.MULTILINE)
_FIXTURE = re.compile(r"^# fixture: (\S+)$", re.MULTILINE)
# Shadows read a patch's paths, not a file's nodes: no family of the registry.
EVERY_FAMILY = (*FAMILIES, "shadows")


def _cases() -> list[object]:
    return [
        pytest.param(family, case, id=f"{family}: {case}")
        for family in FAMILIES
        for case in read_cases(MARKS / f"{family}.py")
    ]


def _shown(family: str, case: Case) -> list[str]:
    """The case's marks, as the lane's reason shows them."""
    text = (MARKS / f"{family}.py").read_text()
    known = Recorded(
        (json.dumps(json.loads(value), sort_keys=True), kind)
        for kind, value in _RECORDED.findall(text)
    )
    fixtures = frozenset(_FIXTURE.findall(text))
    return _rendered(added_marks(None, case.source.encode(), fixtures, known))


def _rendered(marks: list[tuple[tuple[str, str], int]]) -> list[str]:
    return [f"{kind} {text!r}" for (kind, text), _ in marks]


def _expect(case: Case, shown: list[str]) -> None:
    """A cheat shows the mark its header names (among others, maybe); an honest case none."""
    if case.kind == "cheat":
        assert case.expect in shown, shown
    else:
        assert shown == []


@pytest.mark.parametrize(("family", "case"), _cases())
def test_a_cheat_shows_its_mark_and_an_honest_neighbour_none(family: str, case: Case) -> None:
    _expect(case, _shown(family, case))


class _Parent:
    """The parent's tree as ``new_shadow`` asks it: which files and directories it has."""

    def __init__(self, files: list[str]) -> None:
        self._files = files

    def blob_id(self, path: str) -> str | None:
        return "blob" if path in self._files else None

    def has_directory(self, path: str) -> bool:
        return any(name.startswith(f"{path}/") for name in self._files)


@pytest.mark.parametrize("case", read_cases(MARKS / "shadows.py"), ids=str)
def test_a_new_module_shadows_or_not(case: Case) -> None:
    lines = [line.split(": ", 1) for line in case.source.splitlines() if line]
    package = Package("libs/p", Matrix((), (), (), (), ()))
    (new,) = [package.join(path) for key, path in lines if key == "new"]
    parent = _Parent([package.join(path) for key, path in lines if key == "parent"])
    _expect(case, _rendered(new_shadow(new, package, parent)))


def test_every_family_has_its_fixture_file() -> None:
    files = sorted(path.stem for path in MARKS.glob("*.py"))
    assert files == sorted(EVERY_FAMILY)


@pytest.mark.parametrize("family", EVERY_FAMILY)
def test_every_family_has_cheats_and_honest_neighbours(family: str) -> None:
    kinds = {case.kind for case in read_cases(MARKS / f"{family}.py")}
    assert kinds == {"cheat", "honest"}


@pytest.mark.parametrize("family", EVERY_FAMILY)
def test_every_family_says_what_it_catches_why_and_shows_one(family: str) -> None:
    module = importlib.import_module(f"oracle_gate.lanes.tamper.{family}")
    doc = module.__doc__ or ""
    assert "What it catches:" in doc and "Why:" in doc and "Example" in doc
