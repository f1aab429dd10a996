"""The result channel's framing, shared by the gate (``sandbox/relay.py``) and the child.

A frame is an 8-byte big-endian length, then that many bytes of JSON. This
module imports only the standard library: the child loads it before its
``sys.path`` holds anything else.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

__all__ = [
    "ANSWER_OUTCOMES",
    "HEADER",
    "MAX_FRAME",
    "FrameError",
    "frame_bytes",
    "read_checked",
    "read_frame",
    "write_frame",
]

HEADER = struct.Struct(">Q")
MAX_FRAME = 256 * 1024 * 1024
# What a production child's answer may hold besides its sequence number: exactly one
# outcome, and the details that outcome allows.
ANSWER_OUTCOMES = {
    "ready": frozenset(),
    "outside": frozenset(),
    "error": frozenset(),
    "ok": frozenset({"changed"}),
    "object": frozenset({"changed"}),
    "raised": frozenset({"type", "classes", "args", "changed"}),
    "kind": frozenset({"name", "type", "classes"}),
    "unsendable": frozenset(),
    "items": frozenset({"hint", "end", "more"}),
}


class FrameError(Exception):
    """A frame from untrusted code that is not one: oversized, not JSON, not an object."""


def frame_bytes(payload: dict[str, Any]) -> bytes:
    """``payload`` as one frame."""
    data = json.dumps(payload).encode()
    return HEADER.pack(len(data)) + data


def write_frame(fd: int, payload: dict[str, Any]) -> None:
    """Write ``payload`` as one frame on ``fd``."""
    view = memoryview(frame_bytes(payload))
    while view:
        view = view[os.write(fd, view) :]


def read_frame(fd: int) -> dict[str, Any]:
    """Read one frame from ``fd``.

    Raises:
        EOFError: the frame is cut short.
    """
    (size,) = HEADER.unpack(_read_exactly(fd, HEADER.size))
    frame: dict[str, Any] = json.loads(_read_exactly(fd, size))
    return frame


def read_checked(fd: int) -> dict[str, Any]:
    """Read one frame from ``fd``, written by code that may lie.

    Raises:
        EOFError: the pipe closed before a whole frame.
        FrameError: an oversized frame, or one that is not a JSON object.
    """
    (size,) = HEADER.unpack(_read_exactly(fd, HEADER.size))
    if size > MAX_FRAME:
        raise FrameError("an oversized frame")
    try:
        frame = json.loads(_read_exactly(fd, size))
    except ValueError:
        raise FrameError("a frame that is not JSON") from None
    if not isinstance(frame, dict):
        raise FrameError("a frame that is not an object")
    return frame


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("the frame is cut short")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
