"""How running a child can fail: the gate's own failure, tampering with the result
channel, the oracle's mistake, and a path outside the checkout."""

from __future__ import annotations

from oracle_gate.errors import GateError

__all__ = ["OracleMistake", "OutsideCheckout", "RunnerFailure", "RunnerTamper"]


class RunnerFailure(Exception):
    """The child crashed, timed out or answered nonsense; the caller makes it a reject."""


class RunnerTamper(RunnerFailure):
    """The child broke the result protocol: extra, trailing or malformed frames."""


class OracleMistake(Exception):
    """The child found an oracle file or reference wrong; the caller makes it a gate error.

    ``file`` is package-relative; ``ref`` is the invariants.yaml reference that
    led there, if the mistake is in the reference itself.
    """

    def __init__(self, message: str, file: str, line: int | None, ref: str) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.ref = ref


class OutsideCheckout(GateError):
    """A repository module would be imported from outside the checkout under test."""
