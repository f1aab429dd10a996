"""The values the oracles record, as the tamper lane looks them up in production code.

Seed inputs, test values and fixture values are compared by value, not by spelling
(``lanes/spellings.py``): each is held under its canonical text and the other shapes
code could compare it in (a set of its items, reversed, sorted, a dict's items). Code
may also recognise a value by a digest of it, so each value's renderings (its JSON,
``str()``, ``repr()``, as tuples) are hashed with the usual algorithms, and a hex
string that starts or ends one of those digests (``hexdigest()[:8] == "9f3c1a2b"``,
``[-10:]``), the bytes or base64 of one, the number a truncated digest gives
(``int(h[:8], 16)``), a CRC or ``hash()`` of a value of numbers, or the digest of a
prefix of a rendering (``sha256(text[:10].encode())``) is that value too.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from oracle_gate.lanes.spellings import canonical, forms, set_text

__all__ = ["Recorded"]

# What code hashes a value with to recognise it without writing it down; SHAKE digests
# of any length are prefixes of the 64-byte one.
_DIGESTS = (
    "md5",
    "sha1",
    "sha224",
    "sha256",
    "sha384",
    "sha512",
    "blake2b",
    "blake2s",
    "sha3_224",
    "sha3_256",
    "sha3_384",
    "sha3_512",
)
_SHAKES = ("shake_128", "shake_256")
# Digests of prefixes: the common algorithms, prefixes of this many characters.
_PREFIX_DIGESTS = ("md5", "sha1", "sha256", "sha512", "blake2b")
_PREFIXES = range(4, 65)
# At most this many (a package with thousands of fixture cases gets the first ones),
# looked up only for a string as long as a whole digest (MD5 to SHA-512).
_MAX_PREFIX_DIGESTS = 200_000
_WHOLE_DIGESTS = frozenset({32, 40, 64, 128})
# A piece of a digest this long is no coincidence (one in 4e9 per digest for 8).
_MIN_HEX = 8
# A hex digest has digits; a base64 one digits and both cases (words and names do not).
_HEX = re.compile(r"(?=[a-fA-F]*[0-9])[0-9a-fA-F]{8,}")
_BASE64 = re.compile(r"(?=.*[0-9])(?=.*[a-z])(?=.*[A-Z])[A-Za-z0-9+/_-]{11,}={0,2}")
# A number below this is too common to be a CRC or a hash() of a recorded value.
_MIN_NUMBER = 1 << 16


class Recorded:
    """Recorded values by canonical text, with their digests (built on first need)."""

    def __init__(self, entries: Iterable[tuple[str, str]]) -> None:
        """``entries``: ``(JSON text as recorded, what it is)``; a later entry's kind wins."""
        self._values: dict[str, tuple[Any, str]] = {}
        self._texts: dict[str, str] = {}
        for text, kind in entries:
            value = _loaded(text)
            if value is None:
                continue
            self._values[text] = (value, kind)
            for how, shaped in forms(value):
                self._texts[shaped] = f"{kind} {how}".strip()

    def __bool__(self) -> bool:
        return bool(self._texts)

    def __hash__(self) -> int:  # one per check: cached by identity
        return id(self)

    def kind_of(self, value: Any) -> tuple[str, str] | None:
        """``(what it is, its text)`` when ``value`` is a recorded value in some shape."""
        shaped = set_text(value) if isinstance(value, set | frozenset) else canonical(value)
        if shaped is not None and shaped in self._texts:
            return self._texts[shaped], shaped
        return None

    def digest_in(self, value: Any) -> tuple[str, str] | None:
        """``(what it is, the spelling)`` when ``value`` (a string, bytes or an int) is a
        digest of a recorded value, or a piece of one."""
        for piece in _hex_pieces(value):
            kind = self._hex_of(piece)
            if kind is not None:
                return f"digest of a {kind}", piece[:40]
        if isinstance(value, int) and not isinstance(value, bool):
            kind = self._numbers().get(value) or self._number_prefix(value)
            if kind is not None:
                return f"digest of a {kind}", str(value)
        return None

    def _hex_of(self, piece: str) -> str | None:
        found = self._digest_table[0].find(piece)
        if found is None and len(piece) in _WHOLE_DIGESTS:
            found = self._prefix_table.find(piece)
        return found

    def _number_prefix(self, value: int) -> str | None:
        """``int(hexdigest()[:N], 16)``: the number's hex digits, padded to whole bytes or
        to eight, start a digest."""
        if value < 1 << 24 or value.bit_length() > 512:
            return None
        digits = f"{value:x}"
        padded = {digits, digits.zfill(len(digits) + len(digits) % 2), digits.zfill(8)}
        table = self._digest_table[0]
        return next((k for p in sorted(padded) if (k := table.find(p, ends=False))), None)

    def _numbers(self) -> Mapping[int, str]:
        return self._digest_table[1]

    @functools.cached_property
    def _digest_table(self) -> tuple[_Digests, dict[int, str]]:
        hexes = _Digests()
        numbers: dict[int, str] = {}
        for value, kind in self._values.values():
            for rendering in _renderings(value):
                data = rendering.encode("utf-8", "surrogatepass")
                for digest in _all_digests(data):
                    hexes.add(digest, kind)
                for checksum in (zlib.crc32(data), zlib.adler32(data)):
                    numbers.setdefault(checksum, kind)
            numbers.update({n: kind for n in _hashes(value)})
        return hexes, {n: k for n, k in numbers.items() if abs(n) >= _MIN_NUMBER}

    @functools.cached_property
    def _prefix_table(self) -> _Digests:
        hexes = _Digests()
        for value, kind in self._values.values():
            for rendering in _renderings(value):
                for end in _PREFIXES:
                    if end >= len(rendering) or hexes.size >= _MAX_PREFIX_DIGESTS:
                        break
                    data = rendering[:end].encode("utf-8", "surrogatepass")
                    for name in _PREFIX_DIGESTS:
                        hexes.add(hashlib.new(name, data).hexdigest(), kind)
        return hexes


class _Digests:
    """Hex digests by their first and last eight digits: a truncated digest
    (``[:n]``, ``[-n:]``) is found with one dictionary look-up."""

    def __init__(self) -> None:
        self._starts: dict[str, list[tuple[str, str]]] = {}
        self._ends: dict[str, list[tuple[str, str]]] = {}
        self.size = 0

    def add(self, digest: str, kind: str) -> None:
        self._starts.setdefault(digest[:_MIN_HEX], []).append((digest, kind))
        self._ends.setdefault(digest[-_MIN_HEX:], []).append((digest, kind))
        self.size += 1

    def find(self, piece: str, ends: bool = True) -> str | None:
        """What the digest ``piece`` starts (or, with ``ends``, ends) belongs to."""
        for digest, kind in self._starts.get(piece[:_MIN_HEX], ()):
            if digest.startswith(piece):
                return kind
        for digest, kind in self._ends.get(piece[-_MIN_HEX:], ()) if ends else ():
            if digest.endswith(piece):
                return kind
        return None


def _all_digests(data: bytes) -> Iterator[str]:
    for name in _DIGESTS:
        yield hashlib.new(name, data).hexdigest()
    for name in _SHAKES:
        yield hashlib.new(name, data).hexdigest(64)  # type: ignore[call-arg]


def _hex_pieces(value: Any) -> Iterator[str]:
    """What in ``value`` could be a piece of a hex digest: a hex string, the hex of bytes
    (``digest()``), of what a base64 string holds."""
    if isinstance(value, str):
        if _HEX.fullmatch(value):
            yield value.lower()
        elif _BASE64.fullmatch(value):
            for decode in (base64.b64decode, base64.urlsafe_b64decode):
                try:
                    decoded = decode(value + "=" * (-len(value) % 4))
                except (binascii.Error, ValueError):
                    continue
                if len(decoded) * 2 >= _MIN_HEX:
                    yield decoded.hex()
    elif isinstance(value, bytes) and len(value) * 2 >= _MIN_HEX:
        yield value.hex()
        if value.isascii():  # b"9f3c..." or base64.b64encode(h.digest()) == b"n8Ma..."
            yield from _hex_pieces(value.decode("ascii"))


def _renderings(value: Any) -> set[str]:
    """How code could turn a recorded value into text before hashing it."""
    texts = {
        json.dumps(value),
        json.dumps(value, sort_keys=True),
        json.dumps(value, separators=(",", ":")),
        json.dumps(value, sort_keys=True, separators=(",", ":")),
        str(value),
        repr(value),
    }
    tupled = _as_tuples(value, numbers_only=False)
    if tupled is not None:
        texts |= {str(tupled), repr(tupled)}
    plain = canonical(value)
    if plain is not None:
        texts.add(plain)
    return texts


def _hashes(value: Any) -> Iterator[int]:
    """``hash()`` of a value of numbers, lists as tuples: the same in every process (a
    string's differs from one process to the next)."""
    numbers = _as_tuples(value, numbers_only=True)
    if numbers is not None:
        yield hash(numbers)


def _as_tuples(value: Any, numbers_only: bool) -> Any:
    """``value`` with lists as tuples; with ``numbers_only``, None unless it holds numbers
    only."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if isinstance(value, list):
        items = [_as_tuples(item, numbers_only) for item in value]
        return None if any(item is None for item in items) else tuple(items)
    return None if numbers_only else value


def _loaded(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
