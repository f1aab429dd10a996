"""Frozen dataclasses a cold graph builds by the ten thousand (rows, packages, selections).

A frozen dataclass's generated ``__init__`` stores each field through
``object.__setattr__``, since its own ``__setattr__`` refuses; that is three times slower
than storing into the instance's ``__dict__``, and a 50,000-package monorepo makes some
200,000 such objects in one ``select``. ``quick_init`` swaps in an ``__init__`` that
stores directly; everything else (equality, hashing, ``replace``, ``fields``, the refusal
to change a field afterwards) stays the dataclass's own.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

_T = TypeVar("_T")

# A default_factory field's parameter defaults to this; the factory runs per call.
_FACTORY = object()


def quick_init(cls: type[_T]) -> type[_T]:
    """``cls``, a frozen dataclass, with an ``__init__`` that stores into ``__dict__``.

    Raises:
        TypeError: ``cls`` is not a plain frozen dataclass (``__post_init__``, slots,
            ``init=False`` or ``InitVar`` fields): its generated ``__init__`` does more.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"quick_init takes a frozen dataclass, not {cls.__name__}")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if (
        hasattr(cls, "__post_init__")
        or "__slots__" in cls.__dict__
        or any(not f.init for f in fields)
        or len(fields) != len(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    ):
        raise TypeError(f"{cls.__name__}'s dataclass __init__ does more than store fields")
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for field in fields:
        name = field.name
        parameter = name
        value = name
        if field.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = field.default
            parameter = f"{name}=_default_{name}"
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{name}"] = field.default_factory
            parameter = f"{name}=_FACTORY"
            value = f"_factory_{name}() if {name} is _FACTORY else {name}"
        (keyword if field.kw_only else positional).append(parameter)
        body.append(f"    fields[{name!r}] = {value}")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = "\n".join([f"def __init__({signature}):", "    fields = self.__dict__", *body])
    exec(source, namespace)  # the source names only the class's own fields
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    setattr(cls, "__init__", init)  # noqa: B010 - mypy refuses to assign a method
    return cls
