"""What the static reader knows of ``.bzl`` files: the labels they name, and what they load.

The static reader (``bazel/read/``) never runs a macro, so a dependency a
loaded macro adds (``deps = deps + ["//helpers"]``), a loaded constant
(``deps = COMMON_DEPS``) or a rule's private attribute default
(``attr.label(default = "//tools:stamper")``) is invisible in the BUILD file.
Instead, a package depends on every label its loaded ``.bzl`` files name,
through every file they load in turn: an over-approximation of what they name.
String literals are found with a pattern, not a parser, so a ``.bzl`` file
Python cannot parse is read all the same; their escapes are decoded. A label
inside a longer string counts too (``'["//lib"]'``, ``" //lib "``), since code
may cut it out. A label a ``.bzl`` file assembles from pieces that are no labels
themselves (``"/" + "/lib:l"``, ``"%c%clib" % (47, 47)``) is not found: only the
native evaluator runs the code that makes it. A repository's start among its
strings (``"@"``), or a repository name that is computed (``"@%s//lib"``), makes
its labels any repository's. A label the file's own package completes
(``Label(":x")``, ``Label("x")``, ``Label(name)``, ``attr.label(default = "x")``)
makes that package a dependency too.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

from oracle_gate.bazel.labels import LabelRef, label_ref

__all__ = ["BzlFile", "scan_bzl"]

# A Starlark string literal, single- or double-quoted, triple-quoted included
# (a triple-quoted one is read as an empty string followed by its text).
_STRING = re.compile(r""""((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'""")
_LOAD = re.compile(r"""\bload\(\s*["']([^"']+)["']""")
# A label inside a longer string, which code may cut out of it: a JSON document
# (``json.decode('["//lib"]')``), ``" //lib ".strip()``, ``"a,//lib".split(",")``.
# Not after ``:`` or ``/`` (``https://host/x`` is no label), and at least one character
# past ``//`` (``"// a comment"`` would name every package).
_EMBEDDED = re.compile(r"""(?<![:/])(?:@[\w.~+-]*)?//[^\s"'`,;()\[\]{}<>|]+""")
# A repository name that is computed: ``"@%s//lib" % name``, ``"@{}//lib".format(name)``.
_COMPUTED_REPOSITORY = re.compile(r"@[\w.~+-]*[%{]")
# A label the file's package may complete: ``Label("x")``, ``Label(name)``, a label
# attribute's default that is not an absolute literal (``attr.label(default = "tool")``).
_NOT_ABSOLUTE = r"""(?!["'](?://|@)|None\b|\[\s*\]|\{\s*\})"""
_RELATIVE_LABEL = re.compile(
    rf"\bLabel\s*\(\s*{_NOT_ABSOLUTE}"
    rf"|\battr\.label\w*\s*\((?:[^()]|\([^()]*\))*?\bdefault\s*=\s*{_NOT_ABSOLUTE}"
)


@dataclass(frozen=True)
class BzlFile:
    """The labels one ``.bzl`` file names and the files it loads, as written."""

    labels: tuple[tuple[str, LabelRef], ...]  # (as written, what it names)
    # ``:name`` strings, ``Label("x")``, a label attribute's relative default: labels of
    # the file's own package.
    local: bool
    loads: tuple[str, ...]
    # A string that may start another label's repository (``"@"``, ``"@main"``): its
    # ``//`` labels may be of any repository (``"@" + repo + "//lib:l"``).
    repository_pieces: bool = False


def _decoded(match: re.Match[str]) -> str:
    """The string a literal stands for: ``"\\x2f\\x2flib:l"`` names ``//lib:l``."""
    string = match.group(1) if match.group(1) is not None else match.group(2) or ""
    if "\\" not in string:
        return string
    try:
        with warnings.catch_warnings():  # an escape Python does not know warns
            warnings.simplefilter("ignore")
            decoded = ast.literal_eval(match.group(0))
    except (SyntaxError, ValueError):
        return string  # an escape Python does not know: the text as written
    return decoded if isinstance(decoded, str) else string


def scan_bzl(text: bytes) -> BzlFile:
    """The label-like strings and ``load()`` labels of one ``.bzl`` file's bytes."""
    source = text.decode("utf-8", "replace")
    labels: dict[str, LabelRef] = {}
    local = pieces = False
    for match in _STRING.finditer(source):
        string = _decoded(match)
        if string.startswith(":") and len(string) > 1:
            local = True
            continue
        pieces = pieces or (string.startswith("@") and "//" not in string)
        pieces = pieces or _COMPUTED_REPOSITORY.search(string) is not None
        ref = label_ref(string)
        if ref is not None:
            labels.setdefault(string, ref)
            continue
        for embedded in _EMBEDDED.findall(string):
            if (ref := label_ref(embedded)) is not None:
                labels.setdefault(embedded, ref)
    return BzlFile(
        labels=tuple(sorted(labels.items())),
        local=local or _RELATIVE_LABEL.search(source) is not None,
        loads=tuple(dict.fromkeys(_LOAD.findall(source))),
        repository_pieces=pieces,
    )
