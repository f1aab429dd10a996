"""Judging one mutant by one row: the runtime lanes ``check`` runs, on a mutated checkout.

A mutant is killed when ``runtime/judge.judge_rows`` rejects it for the row,
exactly as ``check`` would reject a patch that made the same edit: the
mutated checkout plays the head, the unmutated one the parent (so relations
compare the mutant with the tree). The row's oracles run one kind at a time,
cheapest first (relations, partitions, then properties with their seeds), and
the first reject decides; a mutant no oracle rejects survived. A survivor whose
outputs equal the tree's on every input the row records (its partition and
relation inputs, transformed inputs included) is an equivalent suspect: no
recorded input tells it apart, so it may be the same program.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oracle_gate.errors import GateError
from oracle_gate.model import Finding, Package, Row, Verdict
from oracle_gate.runtime.judge import RowEnv, judge_rows
from oracle_gate.runtime.sandbox import RunnerFailure
from oracle_gate.vet.results import Outcome

__all__ = ["Judged", "Recorded", "baseline", "judge_mutant", "recorded_inputs"]

# How a child's time stop reads in a finding (runtime/sandbox/ words it so).
_TIME_STOP = "timed out after "


@dataclass(frozen=True)
class Recorded:
    """The inputs a row records, per table subject (``module:function``), and what the
    unmutated tree gives on them (each output as its canonical JSON text)."""

    inputs: Mapping[str, tuple[Any, ...]]
    outputs: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class Judged:
    """A judge's outcome with the sentence that explains it."""

    outcome: Outcome
    reason: str


def _rejects(findings: list[Finding], row: Row) -> list[Finding]:
    return [f for f in findings if f.row == row.id and f.verdict is Verdict.REJECT]


def _stages(row: Row) -> list[Row]:
    """The row split into its oracle kinds, cheapest first; empty kinds left out."""
    stages = [
        dataclasses.replace(row, properties=(), partitions=()),
        dataclasses.replace(row, properties=(), relations=()),
        dataclasses.replace(row, partitions=(), relations=()),
    ]
    return [s for s in stages if s.properties or s.partitions or s.relations]


def baseline(package: Package, row: Row, env: RowEnv) -> str | None:
    """Why the row rejects the unmutated tree (``env``'s head), or None when it holds."""
    rejects = _rejects(judge_rows([(package, row)], env)[0], row)
    return rejects[0].reason if rejects else None


def _outputs(env: RowEnv, package: Package, subject: str, inputs: tuple[Any, ...]) -> list[str]:
    directory = env.head_dir / package.path if package.path else env.head_dir
    answer = env.runner.run(
        {"role": "subject", "subject": subject, "inputs": list(inputs)},
        directory,
        import_paths=env.import_paths(env.head_dir, package),
        checkout=env.head_dir,
    )
    return [json.dumps(outcome, sort_keys=True) for outcome in answer["outputs"]]


def _describe(env: RowEnv, package: Package, ref: str, kind: str) -> dict[str, Any]:
    directory = env.head_dir / package.path if package.path else env.head_dir
    return env.runner.run(
        {"role": "describe", "ref": ref, "kind": kind},
        directory,
        import_paths=env.import_paths(env.head_dir, package),
        checkout=env.head_dir,
    )


def recorded_inputs(package: Package, row: Row, env: RowEnv) -> Recorded:
    """The row's recorded inputs and the unmutated tree's outputs on them (``env``'s head).

    Raises:
        RunnerFailure: a table or the subject could not run (the baseline would
            already have rejected the row).
    """
    inputs: dict[str, list[Any]] = {}
    tables = [(ref, "partitions") for ref in row.partitions]
    tables += [(ref, "relations") for ref in row.relations]
    for ref, kind in tables:
        described = _describe(env, package, ref, kind)
        found = inputs.setdefault(described["subject"], [])
        for item in described["items"]:
            if kind == "partitions":
                found.append(item["input"])
            else:
                found += item["inputs"] + [x for x in item["transformed"] if x is not None]
    frozen = {subject: tuple(values) for subject, values in sorted(inputs.items())}
    outputs = {
        subject: tuple(_outputs(env, package, subject, values))
        for subject, values in frozen.items()
    }
    return Recorded(frozen, outputs)


def _same_outputs(package: Package, env: RowEnv, recorded: Recorded) -> bool:
    """Whether the mutant (``env``'s head) gives the tree's outputs on every recorded input."""
    if not any(recorded.inputs.values()):
        return False  # nothing recorded: nothing says the mutant is the same program
    try:
        return all(
            tuple(_outputs(env, package, subject, values)) == recorded.outputs[subject]
            for subject, values in recorded.inputs.items()
        )
    except RunnerFailure:
        return False


def judge_mutant(package: Package, row: Row, env: RowEnv, recorded: Recorded) -> Judged:
    """The row's verdict on the mutant written over ``env.head_dir``.

    A gate error while judging it (the unmutated tree ran clean, so the mutant
    caused it: a result that cannot cross to the oracle, say) counts as killed:
    ``check`` would exit 2 on such a patch, and it would not merge.
    """
    for stage in _stages(row):
        try:
            findings, _ = judge_rows([(package, stage)], env)
        except GateError as error:
            return Judged(Outcome.KILLED, f"the gate could not judge it (exit 2): {error}")
        rejects = _rejects(findings, row)
        if rejects:
            timed_out = all(_TIME_STOP in f.reason for f in rejects)
            return Judged(Outcome.TIMED_OUT if timed_out else Outcome.KILLED, rejects[0].reason)
    if _same_outputs(package, env, recorded):
        return Judged(
            Outcome.EQUIVALENT,
            "no oracle rejects it, and it gives the tree's outputs on every recorded input",
        )
    if not _stages(row):
        return Judged(Outcome.SURVIVED, "the row has no property, partition or relation")
    return Judged(
        Outcome.SURVIVED, "no property, seed, partition or relation of the row rejects it"
    )
