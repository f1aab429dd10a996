"""What reading a BUILD or ``.bzl`` file may take: its syntax's depth and the values it builds.

The native evaluator keeps the same limits with the same words
(``rust/src/starlark/limits.rs``), so a file that stops one backend stops the
other; ``docs/selection.md`` states each rule. A file nested too deeply is never
parsed (both parsers, and every walk of a syntax tree, recurse once per level):
``nesting_problem`` says why, before parsing. A value longer than ``MAX_LENGTH``,
an integer of more than ``MAX_DIGITS`` digits and comprehensions of more than
``MAX_STEPS`` iterations stop the reading with a gate error (``stopped``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from oracle_gate.errors import ConfigError

__all__ = [
    "MAX_BRACKETS",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_INDENTS",
    "MAX_LENGTH",
    "MAX_NESTING",
    "MAX_STEPS",
    "STOPPED",
    "Stop",
    "TooDeep",
    "check_digits",
    "check_length",
    "digits",
    "format_fields",
    "nesting_problem",
    "out_of_steps",
    "printed_length",
    "stopped",
    "stopped_error",
    "too_deep",
    "too_long",
    "too_many_digits",
]

# The most brackets open at once: the most Python's parser takes (its tokenizer stops
# at 200), so the native evaluator reads no file the static reader cannot.
MAX_BRACKETS = 200
# The most levels of indentation, Python's limit too.
MAX_INDENTS = 99
# The most levels of brackets, operators and indentation one expression may nest:
# well under what either parser recurses through, over what a generated BUILD file
# adds together (1,500 lists).
MAX_NESTING = 2000
# The most characters of a string, or items of a list, tuple or dict, one operation
# may build.
MAX_LENGTH = 1 << 24
# The most decimal digits of an integer (Python's own limit for printing one).
MAX_DIGITS = 4300
# The most levels of lists, tuples and dicts inside each other a value given to a rule
# may have: the native evaluator's printing and freezing recurse once per level, and
# so do the static reader's walks.
MAX_DEPTH = 100
# The most iterations (and, natively, calls and items handled) of one file's reading.
MAX_STEPS = 100_000_000

# How the reason of every limit but nesting starts (``STOPPED`` in limits.rs).
STOPPED = "Starlark evaluation stopped"
_STOPPED_AT = re.compile(rf"(?P<path>.+?):(?P<line>[0-9]+): (?P<message>{STOPPED} .*)", re.DOTALL)

_TOO_MANY_BRACKETS = "more than 200 brackets open at once, the most Python's parser reads"
_TOO_MANY_INDENTS = "more than 99 levels of indentation, the most Python's parser reads"
_TOO_MUCH_NESTING = "more than 2000 levels of brackets, operators and indentation in one expression"
_TOO_MANY_DIGITS = "a number of more than 4300 digits, the most Python's parser reads"
# Keywords that join or wrap expressions, each a level of the syntax tree.
_KEYWORD_OPERATORS = frozenset({"and", "or", "not", "in", "is", "if", "else", "lambda"})
# Characters of operators (and ``.``, ``=``): each one a level, however they combine.
_OPERATOR_CHARS = frozenset("+-*/%&|^~<>=!@.")
_BLANK = frozenset(" \t\r\x0b\x0c")
# The least number of ``MAX_DIGITS + 1`` digits: smaller ones Python prints.
_TEN_TO_MAX = 10**MAX_DIGITS


@dataclass(frozen=True)
class TooDeep:
    """Where a file is nested deeper than a limit: its 1-based line and which limit."""

    line: int
    reason: str

    def message(self, kind: str) -> str:
        """The gate error's text for a ``kind`` ("BUILD file", ".bzl file") so nested."""
        return f"{kind} is nested too deeply: {self.reason}; give inner parts names of their own"


def _name_char(char: str) -> bool:
    """ASCII letters, digits and ``_``, and (as both scans take it) any other character."""
    return char == "_" or (char.isascii() and char.isalnum()) or not char.isascii()


def _skip_name(text: str, start: int, dots: bool = False) -> int:
    """The end of the name (or, with ``dots``, the number) starting at ``start``."""
    end = start
    while end < len(text) and (_name_char(text[end]) or (dots and text[end] == ".")):
        end += 1
    return end


def _skip_string(text: str, start: int) -> int:
    """The end of the string literal opening at ``start``: past its closing quote, at
    the newline ending an unclosed one-line string, or at the end of ``text``."""
    quote = text[start]
    triple = text.startswith(quote * 3, start)
    index = start + (3 if triple else 1)
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
        elif char == "\n" and not triple:
            return index
        elif char == quote and not triple:
            return index + 1
        elif char == quote and text.startswith(quote * 3, index):
            return index + 3
        else:
            index += 1
    return len(text)


class _Scan:
    """The state of ``nesting_problem``'s scan (``Scan`` in limits.rs)."""

    def __init__(self) -> None:
        self.line = 1
        self.at_line_start = True
        self.counters = [0]  # per open bracket, and the statement: its current item's levels
        self.levels = 0  # their sum
        self.indents = [0]  # the indentation columns of the enclosing blocks
        self.after_value = False  # a bracket after a value is a call or an index

    def check(self) -> None:
        depth = len(self.indents) - 1 + len(self.counters) - 1 + self.levels
        if depth > MAX_NESTING:
            raise _Deep(_TOO_MUCH_NESTING)

    def level(self) -> None:
        self.counters[-1] += 1
        self.levels += 1

    def operator(self) -> None:
        self.after_value = False
        self.level()
        self.check()

    def open(self) -> None:
        if self.after_value:
            self.level()
        self.after_value = False
        self.counters.append(0)
        if len(self.counters) - 1 > MAX_BRACKETS:
            raise _Deep(_TOO_MANY_BRACKETS)
        self.check()

    def close(self) -> None:
        if len(self.counters) > 1:
            self.levels -= self.counters.pop()
        self.after_value = True

    def comma(self) -> None:
        self.levels -= self.counters[-1]
        self.counters[-1] = 0
        self.after_value = False

    def end_statement(self) -> None:
        self.levels -= self.counters[0]
        self.counters[0] = 0
        self.after_value = False

    def indentation(self, text: str, start: int) -> int:
        """At the start of a line outside brackets: its indentation opens or closes
        blocks, unless the line is blank or a comment. Returns where its first token is."""
        self.at_line_start = False
        column = 0
        index = start
        while index < len(text) and text[index] in " \t\x0c\r":
            char = text[index]
            if char == " ":
                column += 1
            elif char == "\t":
                column = (column // 8 + 1) * 8
            elif char == "\x0c":
                column = 0
            index += 1
        if index == len(text) or text[index] in "\n#":
            return index
        while self.indents[-1] > column:
            self.indents.pop()
        if column > self.indents[-1]:
            self.indents.append(column)
        if len(self.indents) - 1 > MAX_INDENTS:
            raise _Deep(_TOO_MANY_INDENTS)
        self.check()
        return index

    def token(self, text: str, index: int) -> int:
        """Reads the token at ``index``; returns where the next one may start."""
        char = text[index]
        if char == "#":
            end = text.find("\n", index)
            return len(text) if end < 0 else end
        if char in "'\"":
            end = _skip_string(text, index)
            self.line += text.count("\n", index, end)
            self.after_value = True
            return end
        if char == "\\" and text.startswith("\n", index + 1):
            self.line += 1
            return index + 2
        if char == "\n":
            self.line += 1
            if len(self.counters) == 1:
                self.end_statement()
                self.at_line_start = True
            return index + 1
        if char == ";" and len(self.counters) == 1:
            self.end_statement()
            return index + 1
        if char in "([{":
            self.open()
            return index + 1
        if char in ")]}":
            self.close()
            return index + 1
        if char == ",":
            self.comma()
            return index + 1
        if char.isascii() and char.isdigit():
            self.after_value = True
            end = _skip_name(text, index, dots=True)
            if sum(1 for digit in text[index:end] if "0" <= digit <= "9") > MAX_DIGITS:
                raise _Deep(_TOO_MANY_DIGITS)
            return end
        if _name_char(char):
            end = _skip_name(text, index)
            if text[index:end] in _KEYWORD_OPERATORS:
                self.operator()
            else:
                self.after_value = True
            return end
        if char in _OPERATOR_CHARS:
            self.operator()
            return index + 1
        if char not in _BLANK:
            self.after_value = False
        return index + 1


class _Deep(Exception):
    """A limit ``_Scan`` reached, with its reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def nesting_problem(text: str) -> TooDeep | None:
    """Why ``text`` is nested deeper than a parser should follow, or None.

    Measured on tokens, before parsing: brackets open at once (``MAX_BRACKETS``),
    levels of indentation (``MAX_INDENTS``), number literals of more than
    ``MAX_DIGITS`` digits, and nesting (``MAX_NESTING``): the indentation, plus
    for each open bracket one level and the operators, keywords and ``.``s before
    it in its comma-separated item (a bracket right after a value, a call or an
    index, is one more), plus those of the innermost item so far. That is never
    less than the depth of the syntax tree either parser builds. ``nesting`` in
    limits.rs is the same scan, character for character.
    """
    scan = _Scan()
    index = 0
    try:
        while index < len(text):
            step = scan.indentation if scan.at_line_start else scan.token
            index = step(text, index)
    except _Deep as deep:
        return TooDeep(scan.line, deep.reason)
    return None


def printed_length(parts: Iterable[object]) -> int:
    """The least number of characters ``str()``/``repr()`` print for each of ``parts``,
    summed: a string's own, an integer's digits, one for any other value, and for a list,
    tuple or dict one per item (keys and values) besides the items' own.
    ``printed_length`` in checked.rs."""
    total = 0
    stack = list(parts)
    while stack and total <= MAX_LENGTH:
        value = stack.pop()
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, int) and not isinstance(value, bool):
            total += digits(value)
        elif isinstance(value, (tuple, dict)):
            items = (
                [item for pair in value.items() for item in pair]
                if isinstance(value, dict)
                else list(value)
            )
            total += len(items) or 1
            stack.extend(items)
        else:
            total += 1
    return total


def format_fields(template: str) -> int:
    """The replacement fields of a ``format()`` template: each ``{`` that is not ``{{``."""
    return template.count("{") - 2 * template.count("{{")


def too_long(kind: str, length: int) -> str:
    """The reason for building a ``kind`` ("string", "list", "dict") of ``length``."""
    unit = "characters" if kind == "string" else "items"
    return f"building a {kind} of {length} {unit}, more than the {MAX_LENGTH} one value may hold"


def too_many_digits(digits: int) -> str:
    """The reason for building an integer of ``digits`` decimal digits."""
    return f"building an integer of {digits} digits, more than the {MAX_DIGITS} one value may hold"


def too_deep(_: str) -> str:
    """The reason for a value nested more than ``MAX_DEPTH`` levels deep."""
    return f"at a value nested more than {MAX_DEPTH} levels deep, more than any BUILD file needs"


def out_of_steps(path: str) -> str:
    """The reason for a reading of ``path`` that took more than ``MAX_STEPS`` steps."""
    return f"after {MAX_STEPS} steps evaluating {path}, as long as Bazel would spend on it"


def stopped(reason: str, path: str, line: int) -> ConfigError:
    """The gate error for a reading that a limit stopped at ``path:line``."""
    return ConfigError(f"{STOPPED} {reason}", path, line)


def stopped_error(error: str) -> ConfigError | None:
    """The gate error an evaluator's outcome error stands for, when a limit stopped it
    (``path:line: Starlark evaluation stopped ...``); None for any other error."""
    found = _STOPPED_AT.fullmatch(error)
    if found is None:
        return None
    return ConfigError(found["message"], found["path"], int(found["line"]))


class Stop(Exception):
    """A limit the static reader reached at ``line``; ``parse_build`` names the file.

    ``reason`` makes the reason (after ``STOPPED``) from the file's path.
    """

    def __init__(self, line: int, reason: Callable[[str], str]) -> None:
        super().__init__(line)
        self.line = line
        self.reason = reason


def check_length(kind: str, length: int, line: int) -> None:
    """Stops the reading when an operation at ``line`` would build a ``kind`` of ``length``.

    Raises:
        Stop: ``length`` is more than ``MAX_LENGTH``.
    """
    if length > MAX_LENGTH:
        raise Stop(line, lambda _: too_long(kind, length))


def digits(number: int) -> int:
    """The decimal digits of ``number`` (Python prints at most ``MAX_DIGITS`` of them)."""
    number = abs(number)
    if number < _TEN_TO_MAX:
        return len(str(number))
    count = int(math.log10(number)) + 1
    while 10**count <= number:
        count += 1
    while count > 1 and 10 ** (count - 1) > number:
        count -= 1
    return count


def check_digits(count: int, line: int) -> None:
    """Stops the reading when an operation at ``line`` would build an integer of
    ``count`` digits.

    Raises:
        Stop: ``count`` is more than ``MAX_DIGITS``.
    """
    if count > MAX_DIGITS:
        raise Stop(line, lambda _: too_many_digits(count))
