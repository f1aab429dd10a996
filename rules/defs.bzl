"""Public API of the oracle-gate rules. Load from this file only."""

load("//rules/private:gate.bzl", _OracleGateInfo = "OracleGateInfo", _oracle_gate = "oracle_gate")
load("//rules/private:invariant.bzl", _invariant = "invariant")

OracleGateInfo = _OracleGateInfo
invariant = _invariant
oracle_gate = _oracle_gate
