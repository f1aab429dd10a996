"""The result channel's framing, shared by the gate (``sandbox.py``) and the child.

A frame is an 8-byte big-endian length, then that many bytes of JSON. This
module imports only the standard library: the child loads it before its
``sys.path`` holds anything else.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

__all__ = ["HEADER", "MAX_FRAME", "frame_bytes", "read_frame", "write_frame"]

HEADER = struct.Struct(">Q")
MAX_FRAME = 256 * 1024 * 1024


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


def _read_exactly(fd: int, size: int) -> bytes:
    chunks = []
    while size:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise EOFError("the frame is cut short")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)
