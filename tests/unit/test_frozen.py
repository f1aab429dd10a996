"""quick_init: a frozen dataclass built faster, and nothing else about it changed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from oracle_gate.frozen import quick_init
from oracle_gate.model import Matrix, Package, Row


def _declare() -> type[_Sample]:
    """The same frozen dataclass each call: one left as it is, one given quick_init."""

    @dataclass(frozen=True)
    class Sample(_Sample):
        name: str
        tags: tuple[str, ...] = ()
        extra: list[str] = field(default_factory=list)
        note: str = field(default="", kw_only=True)

    return Sample


class _Sample:
    name: str
    extra: list[str]


_Plain = _declare()
_Quick = quick_init(_declare())


def _as_plain(value: object) -> tuple[object, ...]:
    return tuple(getattr(value, f.name) for f in dataclasses.fields(value))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("a",), {}),
        (("a", ("x",)), {}),
        (("a",), {"extra": ["e"], "note": "n"}),
        ((), {"name": "a", "tags": ("y",)}),
    ],
)
def test_it_stores_what_the_dataclass_init_stores(
    args: tuple[object, ...], kwargs: dict[str, object]
) -> None:
    assert _as_plain(_Quick(*args, **kwargs)) == _as_plain(_Plain(*args, **kwargs))


def test_each_object_gets_its_own_factory_default() -> None:
    first, second = _Quick("a"), _Quick("b")
    assert first.extra == [] and first.extra is not second.extra


def test_it_refuses_what_the_dataclass_init_refuses() -> None:
    with pytest.raises(TypeError):
        _Quick()  # the name is required
    with pytest.raises(TypeError):
        _Quick("a", (), [], "n")  # note is keyword-only


def test_the_object_stays_frozen_and_a_dataclass() -> None:
    row = Row("r", ("*.py",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.id = "other"  # type: ignore[misc]
    assert dataclasses.replace(row, id="s") == Row("s", ("*.py",))
    assert hash(row) == hash(Row("r", ("*.py",))) and row != Row("r", ("*.txt",))
    package = Package("p", Matrix((), (), (), (), (row,)))
    assert package.matrix_file == "invariants.yaml" and package.target is None


def test_it_takes_only_a_plain_frozen_dataclass() -> None:
    @dataclass
    class Mutable:
        name: str

    @dataclass(frozen=True)
    class Checked:
        name: str

        def __post_init__(self) -> None:
            assert self.name

    @dataclass(frozen=True)
    class Derived:
        name: str
        size: int = field(init=False, default=0)

    for cls in (Mutable, Checked, Derived):
        with pytest.raises(TypeError):
            quick_init(cls)
