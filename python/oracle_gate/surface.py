"""Test surface: the canonical text of every top-level statement of a test file (its units).

The canonical text is specified in ``docs/surface.md``; the Rust extractor in
``rust/src/surface/`` must produce the same bytes. Keep the two in step: any
change to a rendering rule here is a change to every lockfile.

WARNING: any change to the canonical text (here or in Rust) must raise
``SURFACE_VERSION``: a lock records the version it was written with, and the gate
judges a lock of another version against the parent it recomputes itself
(``locks.py``) instead of reporting every changed unit as drift.
``tests/test_lock_upgrades.py`` fails when the text of its corpus changes and the
version does not.

It deliberately avoids ``ast.dump``/``ast.unparse`` (their output differs
between Python versions) and prints every node through its own small
S-expression vocabulary, normalising the places where CPython's ``ast`` and
ruff's AST differ (implicit string concatenation, f-string parts, ``elif``,
number spellings).
"""

from __future__ import annotations

import ast
import codecs
import json
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

from oracle_gate.errors import SurfaceError
from oracle_gate.pysource.parse import REFUSALS, line_at, refusal

__all__ = [
    "MAX_DEPTH",
    "SURFACE_VERSION",
    "extract_units",
    "keyed_statements",
    "parse_module",
    "scope_bindings",
    "target_names",
    "utf8_source",
]

MAX_DEPTH = 100
"""Deepest parenthesis nesting allowed in one canonical line; deeper fails closed."""

SURFACE_VERSION = 2
"""The version of the canonical text, recorded in every lock (see the module's WARNING).

1: signature annotations never written. 2: those that can run code written (section 4.3).
"""

_LOCAL_MARK = "\0"
"""Brackets a local name while rendering; never in rendered text (strings are JSON-escaped)."""
_MARKED = re.compile("\0([^\0]*)\0")

_BINOP: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.MatMult: "@",
    ast.Div: "/",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.BitAnd: "&",
    ast.FloorDiv: "//",
}
_UNARY: dict[type[ast.unaryop], str] = {
    ast.Not: "not",
    ast.USub: "neg",
    ast.UAdd: "pos",
    ast.Invert: "invert",
}
_CMP: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is-not",
    ast.In: "in",
    ast.NotIn: "not-in",
}
_CONVERSION = {ord("r"): "!r", ord("s"): "!s", ord("a"): "!a"}

# Python 3.11+/3.12+ node types; absent on older interpreters (which cannot parse them anyway).
_TRY_STAR: Any = getattr(ast, "TryStar", None)
_TYPE_ALIAS: Any = getattr(ast, "TypeAlias", None)

_FuncDef = ast.FunctionDef | ast.AsyncFunctionDef


def extract_units(source: bytes, path: str) -> list[tuple[str, str]]:
    """The assertion surface of one Python test file.

    Args:
        source: the file's bytes (UTF-8, optionally with a BOM).
        path: the file's path, used only in error messages.

    Returns:
        ``(key, canonical_text)`` pairs sorted by key. A key is the qualified
        name inside the file (``test_a``, ``TestA::test_b``); the caller
        prefixes the file path. The text format is specified in
        ``docs/surface.md``.

    Raises:
        oracle_gate.errors.SurfaceError: the source is not UTF-8, does not
            parse as Python, or nests deeper than ``MAX_DEPTH``.
    """
    return _Extractor(parse_module(source, path), path).units()


def parse_module(source: bytes, path: str) -> ast.Module:
    """The syntax tree of a test file, decoded and parsed as ``extract_units`` does.

    Raises:
        oracle_gate.errors.SurfaceError: as ``extract_units``.
    """
    return _parse(_decode(source, path), path)


# --------------------------------------------------------------------------- input


_BOM = b"\xef\xbb\xbf"
# PEP 263, as CPython's tokenizer reads it: a comment on line 1, or on line 2
# when line 1 is blank or a comment.
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
_BLANK = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)", re.ASCII)
# A plain text encoding reads these bytes as exactly these ASCII characters.
# Escape-decoding codecs (unicode_escape, raw_unicode_escape), utf-7, idna
# (xn-- labels), utf-16 and non-text codecs (rot13, hex) do not.
_PROBE = (
    bytes(range(0x20, 0x7F)) + b"\t\n\r\f" + b"\\x41 \\u0041 \\101 +AEE- \\N{DIGIT ONE}.xn--ls8h"
)


def _cookie(source: bytes) -> tuple[str, int] | None:
    """The encoding a PEP 263 cookie declares, and its line, or None."""
    for number, line in enumerate(source.split(b"\n", 2)[:2], 1):
        match = _COOKIE.match(line)
        if match:
            return match.group(1).decode("ascii"), number
        if not _BLANK.match(line):
            return None
    return None


def _is_plain_text_encoding(name: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # escape codecs warn about the probe's escapes
            return _PROBE.decode(name) == _PROBE.decode("ascii")
    except (LookupError, UnicodeError, TypeError, ValueError):
        return False


def _decode(source: bytes, path: str) -> str:
    """Decode as Python does: a UTF-8 BOM, else a PEP 263 cookie, else UTF-8."""
    bom = source.startswith(_BOM)
    declared = _cookie(source[3:] if bom else source)
    encoding = "utf-8"
    if declared is not None:
        name, line = declared
        try:
            encoding = codecs.lookup(name).name
        except LookupError:
            raise SurfaceError(f"declares an unknown encoding {name!r}", path, line) from None
        if bom and encoding != "utf-8":
            raise SurfaceError(
                f"starts with a UTF-8 byte order mark but declares encoding {name!r}", path, line
            )
        if not _is_plain_text_encoding(encoding):
            raise SurfaceError(
                f"declares encoding {name!r}, which is not a plain text encoding "
                "(what reads as a comment could run as code)",
                path,
                line,
            )
    if bom:
        source = source[3:]
    try:
        text = source.decode(encoding)
    except UnicodeDecodeError as e:
        label = "UTF-8" if encoding == "utf-8" else encoding
        raise SurfaceError(f"is not valid {label}", path, line_at(source, e.start)) from None
    nul = text.find("\0")
    if nul >= 0:
        # counted in the decoded text: ``nul`` is a character offset, not a byte one
        before = text[:nul].encode("utf-8")
        line = line_at(before, len(before))
        raise SurfaceError("does not parse as Python: source contains a null byte", path, line)
    return text


def utf8_source(source: bytes, path: str) -> bytes:
    """A file that declares its encoding, decoded as Python does and given back as UTF-8.

    The native extractor calls this for files with a coding cookie, so both
    backends read exactly the text Python runs.

    Raises:
        oracle_gate.errors.SurfaceError: as ``extract_units``.
    """
    return _decode(source, path).encode("utf-8", "surrogatepass")


def _parse(text: str, path: str) -> ast.Module:
    # Not parse_python: the text is decoded by the rules above, not by a coding cookie.
    try:
        # Invalid escape sequences warn while parsing; under ``-W error`` the
        # warning would turn into a SyntaxError on some Python versions.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text, filename=path)
    except REFUSALS as error:
        message, line = refusal(error)
        raise SurfaceError(message, path, line or 1) from None


# ------------------------------------------------------------------------- printer


class _TooDeepError(Exception):
    """Rendering recursed past ``MAX_DEPTH``; the text would be too deep anyway."""


def _int_text(value: int) -> str:
    # str() refuses ints over 4300 digits (Python 3.11+); a hex literal can be that big.
    if value.bit_length() < 10_000:
        return str(value)
    chunk = 10**1000
    parts: list[str] = []
    while value >= chunk:
        value, low = divmod(value, chunk)
        parts.append(str(low).zfill(1000))
    return str(value) + "".join(reversed(parts))


def _bytes_text(value: bytes) -> str:
    out = ['b"']
    for b in value:
        if b in (0x22, 0x5C):
            out.append("\\" + chr(b))
        elif 0x20 <= b <= 0x7E:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    out.append('"')
    return "".join(out)


def _constant_text(value: object) -> str:
    if value is None or value is True or value is False:
        return str(value)
    if value is Ellipsis:
        return "..."
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=True)
    if isinstance(value, bytes):
        return _bytes_text(value)
    if isinstance(value, int):
        return _int_text(value)
    if isinstance(value, float):
        return f"(float {value!r})"
    if isinstance(value, complex):
        return f"(complex {value.imag!r})"
    # Not produced by ast.parse; kept total so content is never dropped.
    return f"(?constant {json.dumps(repr(value), ensure_ascii=True)})"


def _join(head: str, parts: Sequence[str]) -> str:
    return f"({head} {' '.join(parts)})" if parts else f"({head})"


def _seq(parts: Sequence[str]) -> str:
    return "(" + " ".join(parts) + ")"


def _paren_depth(text: str) -> int:
    if text.count("(") <= MAX_DEPTH:
        return 0
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    return deepest


class _Printer:
    """Renders AST nodes as canonical S-expressions, collecting the names they mention."""

    def __init__(self) -> None:
        self._locals: frozenset[str] = frozenset()
        self._in_function = False
        self._depth = 0
        self._expr: dict[type[ast.AST], Callable[[Any], str]] = {
            ast.Name: self._name,
            ast.Attribute: self._attribute,
            ast.Constant: self._constant,
            ast.JoinedStr: self._joined_str,
            ast.FormattedValue: lambda n: self._fstring_parts([n])[0],
            ast.BinOp: lambda n: f"({_BINOP[type(n.op)]} {self.expr(n.left)} {self.expr(n.right)})",
            ast.UnaryOp: lambda n: f"({_UNARY[type(n.op)]} {self.expr(n.operand)})",
            ast.BoolOp: self._bool_op,
            ast.Compare: self._compare,
            ast.Call: self._call,
            ast.Subscript: lambda n: f"(sub {self.expr(n.value)} {self.expr(n.slice)})",
            ast.Slice: lambda n: (
                f"(slice {self.opt(n.lower)} {self.opt(n.upper)} {self.opt(n.step)})"
            ),
            ast.Starred: lambda n: f"(star {self.expr(n.value)})",
            ast.Tuple: lambda n: _join("tuple", self.exprs(n.elts)),
            ast.List: lambda n: _join("list", self.exprs(n.elts)),
            ast.Set: lambda n: _join("set", self.exprs(n.elts)),
            ast.Dict: self._dict,
            ast.Lambda: lambda n: f"(lambda {self.params(n.args)} {self.expr(n.body)})",
            ast.IfExp: lambda n: (
                f"(ifexp {self.expr(n.test)} {self.expr(n.body)} {self.expr(n.orelse)})"
            ),
            ast.NamedExpr: lambda n: f"(:= {self.expr(n.target)} {self.expr(n.value)})",
            ast.Await: lambda n: f"(await {self.expr(n.value)})",
            ast.Yield: lambda n: "(yield)" if n.value is None else f"(yield {self.expr(n.value)})",
            ast.YieldFrom: lambda n: f"(yield-from {self.expr(n.value)})",
            ast.ListComp: lambda n: _join("listcomp", [self.expr(n.elt), *self._gens(n)]),
            ast.SetComp: lambda n: _join("setcomp", [self.expr(n.elt), *self._gens(n)]),
            ast.GeneratorExp: lambda n: _join("genexp", [self.expr(n.elt), *self._gens(n)]),
            ast.DictComp: lambda n: _join(
                "dictcomp", [self.expr(n.key), self.expr(n.value), *self._gens(n)]
            ),
        }
        self._stmt: dict[type[ast.AST], Callable[[Any], str]] = {
            ast.Assert: lambda n: _join("assert", [self.expr(n.test), *self.exprs([n.msg])]),
            ast.Expr: lambda n: f"(expr {self.expr(n.value)})",
            ast.Assign: lambda n: _join("=", [*self.exprs(n.targets), self.expr(n.value)]),
            ast.AugAssign: lambda n: (
                f"({_BINOP[type(n.op)]}= {self.expr(n.target)} {self.expr(n.value)})"
            ),
            ast.AnnAssign: self._ann_assign,
            ast.Return: lambda n: _join("return", self.exprs([n.value])),
            ast.Delete: lambda n: _join("del", self.exprs(n.targets)),
            ast.Pass: lambda n: "(pass)",
            ast.Break: lambda n: "(break)",
            ast.Continue: lambda n: "(continue)",
            ast.Raise: lambda n: _join("raise", self.exprs([n.exc, n.cause])),
            ast.Global: lambda n: _join("global", n.names),
            ast.Nonlocal: lambda n: _join("nonlocal", n.names),
            ast.Import: lambda n: _join("import", [self._alias(a) for a in n.names]),
            ast.ImportFrom: lambda n: _join(
                "from",
                ["." * (n.level or 0) + (n.module or ""), *(self._alias(a) for a in n.names)],
            ),
            ast.If: lambda n: f"(if {self.expr(n.test)} {self.body(n.body)} {self.body(n.orelse)})",
            ast.While: lambda n: (
                f"(while {self.expr(n.test)} {self.body(n.body)} {self.body(n.orelse)})"
            ),
            ast.For: lambda n: self._for(n, "for"),
            ast.AsyncFor: lambda n: self._for(n, "async-for"),
            ast.With: lambda n: f"(with {self.with_items(n.items)} {self.body(n.body)})",
            ast.AsyncWith: lambda n: f"(async-with {self.with_items(n.items)} {self.body(n.body)})",
            ast.Try: lambda n: self._try(n, "try", "except"),
            ast.Match: lambda n: _join(
                "match", [self.expr(n.subject), *(self._case(c) for c in n.cases)]
            ),
            ast.FunctionDef: self._def_stmt,
            ast.AsyncFunctionDef: self._def_stmt,
            ast.ClassDef: self._class_stmt,
        }
        if _TRY_STAR is not None:
            self._stmt[_TRY_STAR] = lambda n: self._try(n, "try*", "except*")
        if _TYPE_ALIAS is not None:
            self._stmt[_TYPE_ALIAS] = lambda n: _join(
                "type", [self.expr(n.name), *self._tparams(n), self.expr(n.value)]
            )
        self._pattern: dict[type[ast.AST], Callable[[Any], str]] = {
            ast.MatchValue: lambda n: f"(pvalue {self.expr(n.value)})",
            ast.MatchSingleton: lambda n: f"(psingleton {_constant_text(n.value)})",
            ast.MatchSequence: lambda n: _join("pseq", [self.pattern(p) for p in n.patterns]),
            ast.MatchMapping: self._match_mapping,
            ast.MatchClass: self._match_class,
            ast.MatchStar: lambda n: _join("pstar", [n.name] if n.name else []),
            ast.MatchAs: lambda n: (
                f"(pas {self.pattern(n.pattern) if n.pattern else '()'} {n.name or '()'})"
            ),
            ast.MatchOr: lambda n: _join("por", [self.pattern(p) for p in n.patterns]),
        }

    # -- entry points ---------------------------------------------------------

    def frag(self, render: Callable[[], str]) -> str:
        """Render one fragment.

        A fragment that nests too deeply renders as an over-deep placeholder, which
        the caller's depth check turns into an error naming the fragment's line.
        """
        saved = self._depth
        self._depth = 0
        try:
            return render()
        except _TooDeepError:
            return "(" * (MAX_DEPTH + 1)
        finally:
            self._depth = saved

    def in_scope(self, render: Callable[[], str], *, function: bool) -> str:
        """Render inside a function body (annotations of locals never run) or a class body."""
        saved = self._in_function
        self._in_function = function
        try:
            return render()
        finally:
            self._in_function = saved

    def with_locals(self, names: frozenset[str], render: Callable[[], str]) -> str:
        """Render with ``names`` marked for numbering (section 4.2 of docs/surface.md)."""
        saved = self._locals
        self._locals = names
        try:
            return render()
        finally:
            self._locals = saved

    def expr(self, node: ast.AST) -> str:
        return self._render(node, self._expr)

    def stmt(self, node: ast.AST) -> str:
        return self._render(node, self._stmt)

    def pattern(self, node: ast.AST) -> str:
        return self._render(node, self._pattern)

    def opt(self, node: ast.AST | None) -> str:
        return "()" if node is None else self.expr(node)

    def exprs(self, nodes: Sequence[ast.AST | None]) -> list[str]:
        return [self.expr(n) for n in nodes if n is not None]

    def body(self, stmts: Sequence[ast.stmt]) -> str:
        return _seq([self.stmt(s) for s in stmts])

    def _render(self, node: ast.AST, table: dict[type[ast.AST], Callable[[Any], str]]) -> str:
        self._depth += 1
        if self._depth > MAX_DEPTH + 1:
            raise _TooDeepError
        try:
            render = table.get(type(node))
            return render(node) if render is not None else self._generic(node)
        finally:
            self._depth -= 1

    def _generic(self, node: ast.AST) -> str:
        """Any node this printer does not know, rendered from all its fields (never dropped)."""
        parts = [f"?{type(node).__name__}"]
        for name in node._fields:
            if name in ("ctx", "type_comment"):
                continue
            parts.append(f"({name} {self._any(getattr(node, name, None))})")
        return _seq(parts)

    def _any(self, value: object) -> str:
        if isinstance(value, ast.AST):
            if type(value) in self._expr:
                return self.expr(value)
            if type(value) in self._stmt:
                return self.stmt(value)
            if type(value) in self._pattern:
                return self.pattern(value)
            self._depth += 1
            try:
                return self._generic(value)
            finally:
                self._depth -= 1
        if isinstance(value, list):
            return _seq([self._any(v) for v in value])
        return _constant_text(value)

    # -- expressions ----------------------------------------------------------

    def _name(self, node: ast.Name) -> str:
        return self._identifier(node.id)

    def _identifier(self, name: str) -> str:
        return f"{_LOCAL_MARK}{name}{_LOCAL_MARK}" if name in self._locals else name

    def _attribute(self, node: ast.Attribute) -> str:
        # Walk a dotted chain iteratively: ``a.b.c`` renders as one token.
        chain = [node]
        while isinstance(chain[-1].value, ast.Attribute):
            chain.append(chain[-1].value)
        innermost = chain[-1]
        base = innermost.value
        attrs = [a.attr for a in reversed(chain)]
        if isinstance(base, ast.Name):
            return ".".join([self._identifier(base.id), *attrs])
        text = self.expr(base)
        for attr in attrs:
            text = f"(. {text} {attr})"
        return text

    def _constant(self, node: ast.Constant) -> str:
        return _constant_text(node.value)

    def _joined_str(self, node: ast.JoinedStr) -> str:
        return _join("fstr", self._fstring_parts(node.values))

    def _fstring_parts(self, values: Sequence[ast.expr]) -> list[str]:
        # Merge adjacent literal text and drop empty text: CPython versions and
        # ruff split f-string literals differently.
        parts: list[str] = []
        text: list[str] = []
        for value in values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                text.append(value.value)
                continue
            if text and "".join(text):
                parts.append(_constant_text("".join(text)))
            text = []
            if isinstance(value, ast.FormattedValue):
                item = [self.expr(value.value)]
                if value.conversion in _CONVERSION:
                    item.append(_CONVERSION[value.conversion])
                spec = value.format_spec
                if isinstance(spec, ast.JoinedStr):
                    spec_parts = self._fstring_parts(spec.values)
                    if spec_parts:
                        item.append(_join("spec", spec_parts))
                elif spec is not None:
                    item.append(f"(spec {self.expr(spec)})")
                parts.append(_join("fv", item))
            else:
                parts.append(self.expr(value))
        if text and "".join(text):
            parts.append(_constant_text("".join(text)))
        return parts

    def _bool_op(self, node: ast.BoolOp) -> str:
        # ``(a and b) and c`` is ``a and b and c``: flatten same-operator nesting.
        op = "and" if isinstance(node.op, ast.And) else "or"
        flat: list[ast.expr] = []
        stack = list(reversed(node.values))
        while stack:
            value = stack.pop()
            if isinstance(value, ast.BoolOp) and type(value.op) is type(node.op):
                stack.extend(reversed(value.values))
            else:
                flat.append(value)
        return _join(op, self.exprs(flat))

    def _compare(self, node: ast.Compare) -> str:
        parts = [self.expr(node.left)]
        for op, right in zip(node.ops, node.comparators, strict=True):
            parts += [_CMP[type(op)], self.expr(right)]
        return _join("cmp", parts)

    def _call(self, node: ast.Call) -> str:
        return _join("call", [self.expr(node.func), *self._arguments(node.args, node.keywords)])

    def _arguments(self, args: Sequence[ast.expr], keywords: Sequence[ast.keyword]) -> list[str]:
        parts = self.exprs(args)
        for kw in keywords:
            if kw.arg is None:
                parts.append(f"(dstar {self.expr(kw.value)})")
            else:
                parts.append(f"(= {kw.arg} {self.expr(kw.value)})")
        return parts

    def _dict(self, node: ast.Dict) -> str:
        parts = []
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                parts.append(f"(dstar {self.expr(value)})")
            else:
                parts.append(f"(: {self.expr(key)} {self.expr(value)})")
        return _join("dict", parts)

    def _gens(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> list[str]:
        out = []
        for gen in node.generators:
            head = "async-for" if gen.is_async else "for"
            out.append(
                _join(head, [self.expr(gen.target), self.expr(gen.iter), *self.exprs(gen.ifs)])
            )
        return out

    # -- parameters, headers --------------------------------------------------

    def params(self, args: ast.arguments) -> str:
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
        defaults += args.defaults
        parts = []
        for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
            parts.append(self._param(arg.arg, _running(arg.annotation), default))
            if i == len(args.posonlyargs) - 1:
                parts.append("/")
        if args.vararg is not None:
            vararg = args.vararg
            parts.append(self._param("*" + vararg.arg, _running(vararg.annotation), None))
        elif args.kwonlyargs:
            parts.append("*")
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            parts.append(self._param(arg.arg, _running(arg.annotation), kw_default))
        if args.kwarg is not None:
            kwarg = args.kwarg
            parts.append(self._param("**" + kwarg.arg, _running(kwarg.annotation), None))
        return _seq(parts)

    def _param(self, name: str, annotation: ast.expr | None, default: ast.expr | None) -> str:
        if annotation is None and default is None:
            return name
        text = "(" + name
        if annotation is not None:
            text += " : " + self.expr(annotation)
        if default is not None:
            text += " = " + self.expr(default)
        return text + ")"

    def _tparams(self, node: ast.AST) -> list[str]:
        tparams: list[Any] = getattr(node, "type_params", None) or []
        if not tparams:
            return []
        parts = []
        for tp in tparams:
            kind = type(tp).__name__
            prefix = {"TypeVarTuple": "*", "ParamSpec": "**"}.get(kind, "")
            bound = getattr(tp, "bound", None) if kind == "TypeVar" else None
            default = getattr(tp, "default_value", None)
            parts.append(self._param(prefix + tp.name, bound, default))
        return [_join("tparams", parts)]

    def def_head(self, node: _FuncDef) -> str:
        kind = "async-def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        head = [kind, node.name, *self._tparams(node), self.params(node.args)]
        returns = _running(node.returns)
        if returns is not None:
            head.append(f"(-> {self.expr(returns)})")
        return " ".join(head)

    def class_head(self, node: ast.ClassDef) -> str:
        args = _seq(self._arguments(node.bases, node.keywords))
        return " ".join(["class", node.name, *self._tparams(node), args])

    def decorator_entry(self, node: ast.expr) -> str:
        return f"(decorator {self.expr(node)})"

    def with_items(self, items: Sequence[ast.withitem]) -> str:
        parts = []
        for item in items:
            if item.optional_vars is None:
                parts.append(self.expr(item.context_expr))
            else:
                parts.append(f"(as {self.expr(item.context_expr)} {self.expr(item.optional_vars)})")
        return _seq(parts)

    def handler_head(self, handler: ast.ExceptHandler, tag: str) -> str:
        return f"({tag} {self.opt(handler.type)} {handler.name or '()'})"

    # -- statements -----------------------------------------------------------

    def _alias(self, alias: ast.alias) -> str:
        return alias.name if alias.asname is None else f"(as {alias.name} {alias.asname})"

    def _for(self, node: ast.For | ast.AsyncFor, tag: str) -> str:
        target, it = self.expr(node.target), self.expr(node.iter)
        return f"({tag} {target} {it} {self.body(node.body)} {self.body(node.orelse)})"

    def _try(self, node: Any, tag: str, handler_tag: str) -> str:
        handlers = [
            self.handler_head(h, handler_tag)[:-1] + f" {self.body(h.body)})" for h in node.handlers
        ]
        parts = [self.body(node.body), _seq(handlers), self.body(node.orelse)]
        return _join(tag, [*parts, self.body(node.finalbody)])

    def _case(self, case: ast.match_case) -> str:
        parts = [self.pattern(case.pattern), *self.exprs([case.guard]), self.body(case.body)]
        return _join("case", parts)

    def _def_stmt(self, node: _FuncDef) -> str:
        decorators = [self.decorator_entry(d) for d in node.decorator_list]
        body = self.in_scope(partial(self.body, _strip_docstring(node.body)), function=True)
        return _join(self.def_head(node), [*decorators, body])

    def _class_stmt(self, node: ast.ClassDef) -> str:
        decorators = [self.decorator_entry(d) for d in node.decorator_list]
        body = self.in_scope(partial(self.body, _strip_docstring(node.body)), function=False)
        return _join(self.class_head(node), [*decorators, body])

    def _ann_assign(self, node: ast.AnnAssign) -> str:
        if self._in_function:
            # Python never evaluates a local variable's annotation: `x: int = v` is `x = v`.
            if node.value is None:
                return f"(ann {self.expr(node.target)})"
            return f"(= {self.expr(node.target)} {self.expr(node.value)})"
        parts = [self.expr(node.target), self.expr(node.annotation), *self.exprs([node.value])]
        return _join("ann", parts)

    # -- patterns -------------------------------------------------------------

    def _match_mapping(self, node: ast.MatchMapping) -> str:
        parts = [
            f"(: {self.expr(k)} {self.pattern(p)})"
            for k, p in zip(node.keys, node.patterns, strict=True)
        ]
        if node.rest is not None:
            parts.append(f"(rest {node.rest})")
        return _join("pmap", parts)

    def _match_class(self, node: ast.MatchClass) -> str:
        positional = _seq([self.pattern(p) for p in node.patterns])
        keywords = _seq(
            [
                f"(= {k} {self.pattern(p)})"
                for k, p in zip(node.kwd_attrs, node.kwd_patterns, strict=True)
            ]
        )
        return f"(pclass {self.expr(node.cls)} {positional} {keywords})"


def _running(annotation: ast.expr | None) -> ast.expr | None:
    """A signature annotation when evaluating it can run code, else None (section 4.3).

    Python evaluates a ``def``'s annotations when the ``def`` runs (at import, for a
    test), so ``-> pytest.skip("", allow_module_level=True)`` skips a whole module. A
    type expression runs nothing of the file's: names, attributes of it, constants
    (``"Foo"``, ``None``, ``-1``), subscripts, tuples and lists of them, and ``|``. The
    walk is iterative: an attribute chain may be longer than the recursion limit.
    """
    if annotation is None:
        return None
    stack = [annotation]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name | ast.Constant):
            continue
        if isinstance(node, ast.Attribute):
            stack.append(node.value)
        elif isinstance(node, ast.Subscript):
            stack += [node.value, node.slice]
        elif isinstance(node, ast.Tuple | ast.List):
            stack += node.elts
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            stack += [node.left, node.right]
        elif not _signed_number(node):
            return annotation
    return None


def _signed_number(node: ast.expr) -> bool:
    """``-1``, ``+2.5``: a sign on a number constant (``Literal[-1]``)."""
    return (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub | ast.UAdd)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, int | float | complex)
        and not isinstance(node.operand.value, bool)
    )


def _strip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return body[1:]
    return body


# ----------------------------------------------------------------------- structure

_FuncTypes = (ast.FunctionDef, ast.AsyncFunctionDef)


def target_names(target: ast.expr) -> Iterator[str]:
    """The plain names an assignment target binds (also inside tuples, lists, starred)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from target_names(elt)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def _alias_binds(alias: ast.alias, from_import: bool) -> str:
    if alias.asname is not None:
        return alias.asname
    return alias.name if from_import else alias.name.split(".")[0]


def scope_bindings(node: ast.stmt) -> list[str]:
    """Names a module- or class-level statement binds in its scope, in order, without repeats."""
    return list(dict.fromkeys(_scope_bindings(node)))


def _scope_bindings(node: ast.stmt) -> Iterator[str]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from target_names(target)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        if isinstance(node.target, ast.Name):
            yield node.target.id
    elif isinstance(node, ast.Import | ast.ImportFrom):
        for alias in node.names:
            yield _alias_binds(alias, isinstance(node, ast.ImportFrom))
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    else:
        if isinstance(node, ast.For | ast.AsyncFor):
            yield from target_names(node.target)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if item.optional_vars is not None:
                    yield from target_names(item.optional_vars)
        for body in _nested_bodies(node):
            for stmt in body:
                yield from _scope_bindings(stmt)


def _nested_bodies(node: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists of a compound statement, in source order."""
    yield getattr(node, "body", [])
    for part in [*getattr(node, "handlers", ()), *getattr(node, "cases", ())]:
        yield part.body
    yield getattr(node, "orelse", [])
    yield getattr(node, "finalbody", [])


def _local_names(node: _FuncDef) -> frozenset[str]:
    """The names a unit function's body renumbers (docs/surface.md section 4.2)."""
    stores: set[str] = set()
    kept: set[str] = {a.arg for a in _all_args(node.args)}
    for stmt in node.body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                stores.add(sub.id)
            elif isinstance(sub, ast.arg):
                kept.add(sub.arg)
            elif isinstance(sub, ast.Global | ast.Nonlocal):
                kept.update(sub.names)
            elif isinstance(sub, ast.alias):
                kept.add(_alias_binds(sub, from_import=True))
                kept.add(_alias_binds(sub, from_import=False))
            elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                kept.add(sub.name)
            elif isinstance(sub, ast.ClassDef):
                kept.add(sub.name)
                kept.update(_class_level_stores(sub))
            elif isinstance(sub, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
                kept.update([sub.name] if sub.name else [])
            elif isinstance(sub, ast.MatchMapping):
                kept.update([sub.rest] if sub.rest else [])
            elif type(sub).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple"):
                kept.add(getattr(sub, "name", ""))
    return frozenset(stores - kept)


def _all_args(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


def _class_level_stores(node: ast.ClassDef) -> set[str]:
    """Names stored in a class body itself: class attributes, whose names are not local."""
    found: set[str] = set()
    stack: list[ast.AST] = list(node.body)
    while stack:
        sub = stack.pop()
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
            found.add(sub.id)
        stack.extend(ast.iter_child_nodes(sub))
    return found


def _number_locals(text: str) -> str:
    """Replace each marked local by ``$N``, numbered by first appearance in the text."""
    numbers: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return numbers.setdefault(match.group(1), f"${len(numbers) + 1}")

    return _MARKED.sub(number, text)


def statement_label(node: ast.stmt) -> str:
    """A top-level statement's key before ``#N``: its name, ``=NAMES`` it binds, or ``<code>``."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    names = scope_bindings(node)
    return "=" + ",".join(names) if names else "<code>"


def keyed_statements(body: Sequence[ast.stmt], prefix: str) -> Iterator[tuple[str, ast.stmt]]:
    """Each statement of a scope with its key; a class's members follow the class."""
    seen: dict[str, int] = {}
    for node in body:
        label = statement_label(node)
        seen[label] = seen.get(label, 0) + 1
        key = prefix + label + (f"#{seen[label]}" if seen[label] > 1 else "")
        yield key, node
        if isinstance(node, ast.ClassDef):
            members = [s for s in node.body if isinstance(s, (*_FuncTypes, ast.ClassDef))]
            yield from keyed_statements(members, key + "::")


class _Extractor:
    def __init__(self, tree: ast.Module, path: str) -> None:
        self._path = path
        self._p = _Printer()
        self._too_deep: list[int] = []
        self._out = {key: self._unit(node) for key, node in keyed_statements(tree.body, "")}

    def units(self) -> list[tuple[str, str]]:
        if self._too_deep:
            line = min(self._too_deep)
            raise SurfaceError(f"nests more than {MAX_DEPTH} levels deep", self._path, line)
        return sorted(self._out.items())

    def _line(self, line: int, render: Callable[[], str]) -> str:
        text = self._p.frag(render)
        if _paren_depth(text) > MAX_DEPTH:
            self._too_deep.append(line)
        return text

    def _unit(self, node: ast.stmt) -> str:
        if not isinstance(node, (*_FuncTypes, ast.ClassDef)):
            return self._line(node.lineno, partial(self._p.stmt, node))
        lines = [f"@ {self._line(d.lineno, partial(self._p.expr, d))}" for d in node.decorator_list]
        body = _strip_docstring(node.body)
        if isinstance(node, ast.ClassDef):
            lines.append(self._line(node.lineno, partial(self._p.class_head, node)))
            own = [s for s in body if not isinstance(s, (*_FuncTypes, ast.ClassDef))]
            lines += [self._stmt_line(s, function=False) for s in own]
            return "\n".join(lines)
        lines.append(self._line(node.lineno, partial(self._p.def_head, node)))
        local = _local_names(node)
        lines += [
            self._p.with_locals(local, partial(self._stmt_line, s, function=True)) for s in body
        ]
        return _number_locals("\n".join(lines))

    def _stmt_line(self, node: ast.stmt, *, function: bool) -> str:
        render = partial(self._p.in_scope, partial(self._p.stmt, node), function=function)
        return self._line(node.lineno, render)
