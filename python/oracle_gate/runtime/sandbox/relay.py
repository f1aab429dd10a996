"""The result channel between the gate and a child: exactly one length-prefixed JSON frame
in each direction, nothing after it, and a served child's calls relayed to the oracle."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from typing import Any

from oracle_gate.runtime.frames import HEADER, MAX_FRAME
from oracle_gate.runtime.sandbox.failures import (
    OracleMistake,
    OutsideCheckout,
    RunnerFailure,
    RunnerTamper,
)
from oracle_gate.runtime.sandbox.processes import Child, kill_group, tail

__all__ = ["checked", "collect", "parse_answer", "served_answer"]


def parse_answer(data: bytes) -> dict[str, Any]:
    """The single answer frame in ``data``.

    Raises:
        RunnerFailure: no answer at all (the child died first).
        RunnerTamper: anything but exactly one well-formed frame.
    """
    if not data:
        raise RunnerFailure("no answer")
    buffer = bytearray(data)
    answer = _take_frame(buffer)
    if answer is None:
        raise RunnerTamper("tamper: a cut-short frame on the result channel")
    if buffer:
        raise RunnerTamper("tamper: more than one frame on the result channel")
    return answer


def checked(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer, or the exception a child's report of failure stands for."""
    if "error" in answer:
        raise RunnerFailure(str(answer["error"]))
    if "tamper" in answer:
        raise RunnerTamper(f"tamper: {answer['tamper']}")
    if "mistake" in answer:
        raise OracleMistake(
            str(answer["mistake"]), str(answer["file"]), answer["line"], str(answer["ref"])
        )
    if "outside" in answer:
        raise OutsideCheckout(
            "repository modules would be imported from outside the checkout under test: "
            + ", ".join(map(str, answer["outside"]))
            + "; declare the package in deps (invariants.yaml or BUILD), and uninstall "
            "editable installs of the repository's packages"
        )
    return answer


def _take_frame(buffer: bytearray) -> dict[str, Any] | None:
    """The first whole frame in ``buffer`` (removed from it), or None while it is incomplete.

    Raises:
        RunnerTamper: an oversized frame, or one that is not a JSON object.
    """
    if len(buffer) < HEADER.size:
        return None
    (size,) = HEADER.unpack(buffer[: HEADER.size])
    if size > MAX_FRAME:
        raise RunnerTamper("tamper: an oversized frame on the result channel")
    end = HEADER.size + size
    if len(buffer) < end:
        return None
    data = bytes(buffer[HEADER.size : end])
    del buffer[:end]
    try:
        frame = json.loads(data)
    except ValueError:
        raise RunnerTamper("tamper: a result frame that is not JSON") from None
    if not isinstance(frame, dict):
        raise RunnerTamper("tamper: a result frame that is not an object")
    return frame


def served_answer(oracle: Child, server: Child, timeout: float) -> dict[str, Any]:
    """The oracle child's answer; both children's output is kept for a diagnostic.

    Raises:
        RunnerFailure: timeout, a child died before the oracle's answer.
        RunnerTamper: the oracle child found the production child breaking the protocol.
    """
    oracle.close_request()
    server.close_request()
    data, output = collect(oracle.process, oracle.result_fd, timeout, also=server)
    if data is None:
        raise RunnerFailure(f"timed out after {timeout:g}s")
    try:
        answer = parse_answer(data)
    except RunnerTamper:
        raise
    except RunnerFailure:
        raise RunnerFailure(f"runner gave no result ({tail(output, oracle)})") from None
    if "gone" in answer:
        raise RunnerFailure(f"the production child died ({tail(server.output, server)})")
    return checked(answer)


def collect(
    process: subprocess.Popen[bytes],
    result_fd: int,
    timeout: float,
    also: Child | None = None,
) -> tuple[bytes | None, bytes]:
    """Everything on the result pipe until the child exits and closes it; None on timeout.

    The child's stdout and stderr are read too (for a diagnostic), and those of
    ``also`` (the production child of a split run, which must never block on a
    full pipe) into its ``output``, but a grandchild holding them open never
    delays the answer.
    """
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    result = bytearray()
    output = bytearray()
    result_open = True
    with selectors.DefaultSelector() as selector:
        selector.register(result_fd, selectors.EVENT_READ, result)
        selector.register(process.stdout, selectors.EVENT_READ, output)
        if also is not None and also.process.stdout is not None:
            selector.register(also.process.stdout, selectors.EVENT_READ, also.output)
        while result_open or process.poll() is None:
            if process.poll() is not None:
                kill_group(process)  # the child is done: its group may hold the pipe open
            left = deadline - time.monotonic()
            if left <= 0:
                return None, bytes(output)
            for key, _ in selector.select(min(left, 0.5)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                    if key.fd == result_fd:
                        result_open = False
                    continue
                if len(key.data) < (1 << 16) or key.fd == result_fd:
                    key.data.extend(chunk)
    return bytes(result), bytes(output)
