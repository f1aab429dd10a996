"""Runtime lanes: seeds, budgeted properties, partition tables, assumptions, relations.

Only selected rows run. Production code runs in runner subprocesses against
checkouts of parent and head (``runtime/sandbox/``); this module turns their plain
JSON answers into findings. The same code serves ``check`` (both trees, from
git) and a Bazel gate (one tree on disk, no relations: they need a parent).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from blake3 import blake3

from oracle_gate import progress
from oracle_gate.config.ledgers import (
    ASSUMPTIONS_FILE,
    FREEZE_FILE,
    SEEDS_FILE,
    Assumption,
    FreezeEntry,
    budget_problem,
    expiry_problem,
    parse_assumptions,
    parse_freeze,
    parse_seeds,
    read_ledger,
)
from oracle_gate.errors import ConfigError, GateError, TreeError
from oracle_gate.model import Finding, Lane, Package, Row, Verdict, ref_file
from oracle_gate.repo.trees import Tree
from oracle_gate.runtime.canonical import canonical_text
from oracle_gate.runtime.sandbox import OracleMistake, Runner, RunnerFailure, kill_children

__all__ = [
    "Freezes",
    "ReplayHealth",
    "RowEnv",
    "RuntimeStats",
    "flake_reason",
    "judge_rows",
    "runs_children",
    "standing_freezes",
]

RERUNS = 5
_SEARCH_GRACE_SECONDS = 30.0
# Examples of a property's search in the shifted environment: a time bomb or a tell trips
# on any input, so a few find it; the usual run's budget already searched for the rest.
_SHIFTED_EXAMPLES = 10
# Child roles that read oracle tables only, never importing production code (``child.py``).
_ORACLE_ONLY = frozenset({"describe", "evaluate"})


@dataclass(frozen=True)
class ReplayHealth:
    """One package's replay, for the health record: where its baseline came from
    ("cached", "recorded", or None without one), what it took, the budget it was given,
    and how many tests ran again (None: all) or kept the parent's result."""

    baseline: str | None
    baseline_seconds: float | None
    budget_seconds: float
    rerun: int | None
    kept: int


@dataclass
class RuntimeStats:
    """Counts for the gate health record."""

    relations: dict[str, dict[str, int]] = field(default_factory=dict)
    freeze_hits: int = 0
    freeze_misses: int = 0
    seeds_appended: int = 0
    replays: dict[str, ReplayHealth] = field(default_factory=dict)  # package path -> its replay


@dataclass(frozen=True)
class RowEnv:
    """Where rows run and what they read."""

    head: Tree  # oracle files (seeds, freezes, assumptions, sources) are read from here
    head_dir: Path  # a checkout of head; package code runs in it
    parent_dir: Path | None  # a checkout of the parent; None runs no relations
    parent_packages: frozenset[str]  # packages that exist in the parent
    today: datetime.date
    # New counterexamples are appended below it (check --write-seeds); None reports only.
    seed_sink: Path | None
    head_name: str  # names the head in the notes of appended seeds
    # Whose flake_freeze.yaml excuses a flake: the parent's for check (a freeze the
    # patch adds is the agent's own word), the tree's own for the Bazel gate.
    freezes_from: Tree
    runner: Runner = field(default_factory=Runner)
    # Whether a freeze past its expiry stops excusing: not in the Bazel gate, where
    # today's date is not an input of the cached action (docs/bazel.md).
    freezes_expire: bool = True
    # package path -> the packages it depends on (transitively), put on sys.path after it
    deps: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Whether the runs only have to tell that a row rejects (vet: its first reject
    # decides): then a property search stops at its first counterexample, unshrunk, a
    # property run that rejected is not run again in the shifted environment, and the
    # package's assumption register (no row's finding) is not checked. check reports a
    # shrunk counterexample and every finding.
    first_reject: bool = False
    # Answers kept across the rows judged in this env, when given (vet's mutants): those
    # of the parent's checkout (the unmutated tree) and of the oracle tables, which no
    # mutant changes. Head code is run afresh for every request, as check runs it.
    kept: dict[str, dict[str, Any]] | None = field(default=None, compare=False)

    def shifted(self) -> RowEnv:
        """The same, its children in the shifted environment (``runtime/variants.py``)."""
        return dataclasses.replace(self, runner=self.runner.shifted())

    def import_paths(self, tree: Path, package: Package) -> list[Path]:
        """The package and its dependencies, all from the checkout at ``tree``."""
        own = [package.path, *self.deps.get(package.path, ())]
        return [tree / path if path else tree for path in own]


@dataclass(frozen=True)
class _Context:
    package: Package
    row: Row
    env: RowEnv
    stats: RuntimeStats

    def dir(self, tree: Path) -> Path:
        return tree / self.package.path if self.package.path else tree

    def run(
        self,
        request: dict[str, Any],
        tree: Path,
        hash_seed: int = 0,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """One child call in ``tree``; it may take the row's time budget (the runner's floor
        at least)."""
        seconds = self.row.budget.seconds if timeout is None else timeout
        kept = self.env.kept
        key = json.dumps(
            [str(tree), self.package.path, self.env.runner.variant.name, hash_seed, request],
            sort_keys=True,
        )
        if kept is not None and key in kept:
            return kept[key]
        answer = self.env.runner.run(
            request,
            self.dir(tree),
            import_paths=self.env.import_paths(tree, self.package),
            checkout=tree,
            timeout=seconds,
            hash_seed=hash_seed,
        )
        if kept is not None and (tree == self.env.parent_dir or request["role"] in _ORACLE_ONLY):
            kept[key] = answer
        return answer

    def run_served(self, request: dict[str, Any], tree: Path, timeout: float) -> dict[str, Any]:
        """An oracle child in ``tree`` whose production calls a production child serves."""
        return self.env.runner.run_served(
            request,
            self.dir(tree),
            import_paths=self.env.import_paths(tree, self.package),
            checkout=tree,
            timeout=timeout,
        )

    def finding(self, verdict: Verdict, ref: str, reason: str) -> Finding:
        return Finding(
            verdict=verdict,
            lane=Lane.PROPERTY,
            path=self.package.join(ref_file(ref)),
            reason=reason,
            row=self.row.id,
            package=self.package.path,
        )


def _read(tree: Tree, path: str) -> bytes | None:
    try:
        return read_ledger(tree, path)
    except TreeError:
        return None


def _append_seed(context: _Context, name: str, sample: Any, error: str) -> str | None:
    """Append a new counterexample to ``seed_sink``'s seeds.jsonl; returns its path.

    Idempotent: an input the file already records for this row and property is
    not appended again, so rerunning ``check --write-seeds`` adds nothing.
    """
    if context.env.seed_sink is None:
        return None
    path = context.package.join(SEEDS_FILE)
    target = context.env.seed_sink / path
    if target.is_file():
        recorded = parse_seeds(target.read_bytes(), path)
        case = {"row": context.row.id, "prop": name, "input": sample}
        if any(all(seed.data.get(k) == v for k, v in case.items()) for seed in recorded):
            return path
    line = {
        "row": context.row.id,
        "prop": name,
        "input": sample,
        "expect": "hold",
        "note": f"found by oracle-gate on {context.env.head_name}: {error}"[:200],
        "added": context.env.today.isoformat(),
        "status": "active",
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, sort_keys=True) + "\n")
    context.stats.seeds_appended += 1
    return path


def _seed_findings(
    context: _Context, ref: str, seeds: list[Any], results: list[Any]
) -> list[Finding]:
    findings = []
    for seed, result in zip(seeds, results, strict=True):
        raised = result["raised"]
        where = f"{context.package.join(SEEDS_FILE)}:{seed.line}"
        if seed.data["expect"] == "hold" and raised:
            findings.append(
                context.finding(
                    Verdict.REJECT,
                    ref,
                    f"regression: remembered counterexample {where} fails again ({raised})",
                )
            )
        elif seed.data["expect"] == "fail" and not raised:
            findings.append(
                context.finding(
                    Verdict.REJECT,
                    ref,
                    f"property lost falsifiability: known-bad input {where} now passes",
                )
            )
    return findings


def _search_finding(context: _Context, ref: str, search: dict[str, Any]) -> Finding:
    status = search["status"]
    name = ref.split(":", 1)[1]
    if status == "counterexample":
        sample = search["input"]
        if sample is None:
            return context.finding(
                Verdict.REJECT,
                ref,
                f"counterexample found ({search['error']}); not JSON, not stored",
            )
        path = _append_seed(context, name, sample, search["error"])
        stored = f"recorded in {path}" if path else "record it with check --write-seeds"
        return context.finding(
            Verdict.REJECT,
            ref,
            f"new counterexample {json.dumps(sample)[:120]} ({search['error']}); {stored}",
        )
    if status == "error":
        return context.finding(Verdict.REJECT, ref, f"property could not run: {search['error']}")
    window = f"{search.get('examples', 0)} examples"
    if status == "budget":
        return context.finding(
            Verdict.PASS,
            ref,
            f"no counterexample in this window ({window}, time budget stop); not a proof",
        )
    return context.finding(Verdict.PASS, ref, f"no counterexample in {window}; not a proof")


def _properties(context: _Context) -> list[Finding]:
    """All properties of the row in one oracle child (its production calls served by a
    production child): seeds replay, then a budgeted search each."""
    refs = context.row.properties
    if not refs:
        return []
    seeds_text = _read(context.env.head, context.package.join(SEEDS_FILE))
    seeds = parse_seeds(seeds_text, context.package.join(SEEDS_FILE)) if seeds_text else []
    per_ref = {
        ref: [
            s
            for s in seeds
            if s.data.get("row") == context.row.id
            and s.data.get("prop") == ref.split(":", 1)[1]
            and s.data.get("status", "active") == "active"
        ]
        for ref in refs
    }
    request: dict[str, Any] = {
        "role": "properties",
        "properties": [
            {"ref": ref, "seeds": [{"input": s.data["input"]} for s in per_ref[ref]]}
            for ref in refs
        ],
        "examples": context.row.budget.examples,
        "seconds": context.row.budget.seconds,
        "seed": 0,
    }
    if context.env.first_reject:
        request["shrink"] = False
    timeout = _search_timeout(context, len(refs))
    try:
        answer = context.run_served(request, context.env.head_dir, timeout)
    except RunnerFailure as failure:
        return [
            context.finding(Verdict.REJECT, ref, f"property run failed: {failure}") for ref in refs
        ]
    findings: list[Finding] = []
    held: list[dict[str, Any]] = []
    for ref, item, result in zip(refs, request["properties"], answer["results"], strict=True):
        own = _seed_findings(context, ref, per_ref[ref], result["seeds"])
        own.append(_search_finding(context, ref, result["search"]))
        findings += own
        if all(f.verdict is Verdict.PASS for f in own):
            held.append(item)
    if context.env.first_reject and any(f.verdict is Verdict.REJECT for f in findings):
        return findings
    return findings + _shifted_properties(context, {**request, "properties": held}, per_ref)


def _search_timeout(context: _Context, properties: int) -> float:
    """How long a child searching ``properties`` of the row may take: each its budget."""
    return properties * context.row.budget.seconds + _SEARCH_GRACE_SECONDS


def _shifted_properties(
    context: _Context, request: dict[str, Any], per_ref: dict[str, list[Any]]
) -> list[Finding]:
    """The properties that held in the usual run, on the head's code in the shifted
    environment (``runtime/variants.py``): their seeds, then a short search (a time bomb or
    a tell trips on any input). One that fails there is a reject, unless the parent's code
    fails there on the same inputs too."""
    if not request["properties"]:
        return []
    shifted = dataclasses.replace(context, env=context.env.shifted())
    short = {**request, "examples": min(_SHIFTED_EXAMPLES, request["examples"])}
    refs = [item["ref"] for item in short["properties"]]
    timeout = _search_timeout(context, len(refs))
    described = shifted.env.runner.described()
    try:
        answer = shifted.run_served(short, context.env.head_dir, timeout)
    except RunnerFailure as failure:
        return [
            context.finding(
                Verdict.REJECT,
                ref,
                f"behaviour depends on how it is run: the property held in the usual "
                f"environment and could not run in the shifted one ({described}): {failure}",
            )
            for ref in refs
        ]
    findings = []
    for ref, result in zip(refs, answer["results"], strict=True):
        moved = _moved_there(per_ref[ref], result)
        if moved is None:
            continue
        why, inputs = moved
        if inputs is not None and _parent_fails_there(shifted, ref, inputs, timeout):
            continue
        findings.append(
            context.finding(
                Verdict.REJECT,
                ref,
                f"behaviour depends on how it is run: the property holds on the head's code "
                f"in the usual environment and {why} in the shifted one ({described}), "
                "where the parent's code "
                + ("holds on the same inputs" if inputs is not None else "was not asked"),
            )
        )
    return findings


def _moved_there(seeds: list[Any], result: dict[str, Any]) -> tuple[str, list[Any] | None] | None:
    """How a property's shifted run differs from a usual run that held: what it did, and
    the inputs to ask the parent's code about (None: none can be replayed); None if it
    held there too."""
    for seed, outcome in zip(seeds, result["seeds"], strict=True):
        if (seed.data["expect"] == "hold") == bool(outcome["raised"]):
            verb = "fails" if outcome["raised"] else "passes"
            shown = json.dumps(seed.data["input"])[:80]
            return f"the remembered input {shown} {verb}", [seed.data["input"]]
    search = result["search"]
    if search["status"] == "counterexample":
        sample = search["input"]
        why = f"finds the counterexample {json.dumps(sample)[:120]} ({search['error']})"
        return why, None if sample is None else [sample]
    if search["status"] == "error":
        return f"could not run ({search['error']})", None
    return None


def _parent_fails_there(shifted: _Context, ref: str, inputs: list[Any], timeout: float) -> bool:
    """Whether the parent's code, in the shifted environment, fails the property on each
    of ``inputs`` too: then the property depends on the environment, not the patch."""
    parent_dir = shifted.env.parent_dir
    if parent_dir is None or shifted.package.path not in shifted.env.parent_packages:
        return False
    request = {
        "role": "properties",
        "properties": [{"ref": ref, "seeds": [{"input": value} for value in inputs]}],
        "examples": 0,
        "seconds": shifted.row.budget.seconds,
        "seed": 0,
    }
    try:
        answer = shifted.run_served(request, parent_dir, timeout)
    except (RunnerFailure, OracleMistake):
        return False  # the parent has no such property, or cannot run it: nothing excuses
    [result] = answer["results"]
    return all(outcome["raised"] for outcome in result["seeds"])


def _describe(context: _Context, ref: str, kind: str) -> dict[str, Any]:
    return context.run({"role": "describe", "ref": ref, "kind": kind}, context.env.head_dir)


def _subject_outputs(
    context: _Context, tree: Path, subject: str, inputs: list[Any], hash_seed: int = 0
) -> list[dict[str, Any]]:
    request = {"role": "subject", "subject": subject, "inputs": inputs}
    outputs: list[dict[str, Any]] = context.run(request, tree, hash_seed)["outputs"]
    return outputs


def _outcome_text(outcome: dict[str, Any]) -> str:
    return canonical_text(outcome.get("ok")) if "ok" in outcome else f"raised {outcome['raised']}"


def input_hash(tagged: Any) -> str:
    """The (row id, input hash) half that isolates a flaky partition row."""
    return blake3(canonical_text(tagged).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Freezes:
    """Standing freezes by key (node id, or ``row:input_hash``), and why the others stand not."""

    excused: dict[str, FreezeEntry]
    refused: dict[str, str]  # key -> why its freeze excuses nothing


def standing_freezes(tree: Tree, package: Package, today: datetime.date | None) -> Freezes:
    """The freezes of ``tree``'s ledger that hold by the ledger lane's rules on ``today``:
    an expiry, not past, and a ledger within its budget (the budget alone without ``today``)."""
    path = package.join(FREEZE_FILE)
    text = _read(tree, path)
    if not text:
        return Freezes({}, {})
    try:
        ledger = parse_freeze(text, path)
    except GateError:
        return Freezes({}, {})  # the ledger lane reports it; nothing is excused
    over = budget_problem(ledger)
    excused: dict[str, FreezeEntry] = {}
    refused: dict[str, str] = {}
    for entry in ledger.entries:
        expired = expiry_problem(entry, today) if today is not None else None
        problem = expired or (f"excuses nothing: {over}" if over else None)
        if problem:
            refused[entry.key] = f"its freeze in {path} {problem}"
        else:
            excused[entry.key] = entry
    return Freezes(excused, refused)


def _flake_remedy(context: _Context, freezes: Freezes, key: str) -> str:
    """Why no freeze excuses the flake ``key``, and what to do."""
    if key in freezes.refused:
        return freezes.refused[key]
    if context.env.freezes_from is not context.env.head:
        head = standing_freezes(context.env.head, context.package, None)
        if key in head.excused or key in head.refused:
            return (
                f"the freeze this patch adds in {context.package.join(FREEZE_FILE)} excuses "
                "nothing until it has landed"
            )
    return "freeze it with a replacement row or fix it"


def flake_reason(what: str, runs: str, key: str, remedy: str) -> str:
    """One wording for every flake the gate isolates (partition rows, replayed tests)."""
    return f"{what} gives different results across {runs}: flake isolated as ({key}); {remedy}"


def _flake_finding(context: _Context, ref: str, item: dict[str, Any]) -> Finding:
    key = f"{item['id']}:{input_hash(item['input'])}"
    today = context.env.today if context.env.freezes_expire else None
    freezes = standing_freezes(context.env.freezes_from, context.package, today)
    entry = freezes.excused.get(key)
    if entry is None:
        context.stats.freeze_misses += 1
        return context.finding(
            Verdict.REJECT,
            ref,
            flake_reason(
                f"partition {item['id']}",
                f"{RERUNS} reruns",
                key,
                _flake_remedy(context, freezes, key),
            ),
        )
    context.stats.freeze_hits += 1
    if not entry.data.get("replacement_row"):
        return context.finding(
            Verdict.REJECT, ref, f"frozen flake {key} names no replacement_row; a freeze must"
        )
    return context.finding(
        Verdict.PREEXISTING,
        ref,
        f"partition {item['id']} is flaky and frozen ({key}, replaced by "
        f"{entry.data['replacement_row']}): reported as debt",
    )


def _reruns(context: _Context, subject: str, inputs: list[Any]) -> list[list[dict[str, Any]]]:
    """The subject on every input in RERUNS children at once, one ``PYTHONHASHSEED`` each."""
    pool = ThreadPoolExecutor(max_workers=RERUNS)
    try:
        return list(
            pool.map(
                lambda seed: _subject_outputs(
                    context, context.env.head_dir, subject, inputs, hash_seed=seed
                ),
                range(RERUNS),
            )
        )
    except BaseException:
        kill_children()  # an interrupt or a failed rerun: the others need not finish
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _partition_table(context: _Context, ref: str) -> tuple[list[Finding], list[dict[str, Any]]]:
    described = _describe(context, ref, "partitions")
    items = described["items"]
    inputs = [item["input"] for item in items]
    runs = _reruns(context, described["subject"], inputs)
    findings: list[Finding] = []
    contract_items = []
    for index, item in enumerate(items):
        outcomes = {_outcome_text(run[index]) for run in runs}
        first = runs[0][index]
        if len(outcomes) > 1:
            findings.append(_flake_finding(context, ref, item))
        elif item["kind"] == "invalid":
            if "raised" not in first:
                findings.append(
                    context.finding(
                        Verdict.REJECT,
                        ref,
                        f"partition {item['id']} ({item['cls']}, invalid) must raise, "
                        "but returned a value",
                    )
                )
        elif "raised" in first:
            findings.append(
                context.finding(
                    Verdict.REJECT,
                    ref,
                    f"partition {item['id']} ({item['cls']}) raised {first['raised']}",
                )
            )
        elif item["has_contract"]:
            contract_items.append({"id": item["id"], "output": first["ok"]})
    if contract_items:
        request = {"role": "evaluate", "ref": ref, "kind": "partitions", "items": contract_items}
        results = context.run(request, context.env.head_dir)["results"]
        by_id = {item["id"]: item for item in items}
        for checked, result in zip(contract_items, results, strict=True):
            if not result["holds"]:
                item = by_id[checked["id"]]
                detail = f" ({result['error']})" if "error" in result else ""
                findings.append(
                    context.finding(
                        Verdict.REJECT,
                        ref,
                        f"partition {item['id']} ({item['kind']}: {item['relation']}) "
                        f"fails its contract{detail}",
                    )
                )
    if not findings:
        findings += _shifted_partitions(context, ref, described["subject"], items, runs[0])
    if not findings:
        findings.append(context.finding(Verdict.PASS, ref, f"all {len(items)} partition rows hold"))
    return findings, items


def _partition_verdicts(
    context: _Context, ref: str, items: list[dict[str, Any]], outputs: list[dict[str, Any]]
) -> list[str]:
    """Per partition row, what its contract says of ``outputs``: ``raised``, ``holds``,
    ``fails``, or ``returned`` (no contract). The contract is the head's, whichever code
    gave the outputs."""
    verdicts = ["raised" if "raised" in out else "returned" for out in outputs]
    checked = [
        index for index, item in enumerate(items) if item["has_contract"] and "ok" in outputs[index]
    ]
    if checked:
        request = {
            "role": "evaluate",
            "ref": ref,
            "kind": "partitions",
            "items": [{"id": items[i]["id"], "output": outputs[i]["ok"]} for i in checked],
        }
        results = context.run(request, context.env.head_dir)["results"]
        for index, result in zip(checked, results, strict=True):
            verdicts[index] = "holds" if result["holds"] else "fails"
    return verdicts


def _shifted_partitions(
    context: _Context,
    ref: str,
    subject: str,
    items: list[dict[str, Any]],
    usual: list[dict[str, Any]],
) -> list[Finding]:
    """The partition rows whose verdict moves when the head's code runs in the shifted
    environment (``runtime/variants.py``: the clock a year and more ahead, another host,
    a shell's variables): a reject, unless the parent's code moves the same way there.
    Outputs may differ (a date in a label); what the contract says of them may not."""
    shifted = dataclasses.replace(context, env=context.env.shifted())
    inputs = [item["input"] for item in items]
    head_dir = context.env.head_dir
    there = _partition_verdicts(
        context, ref, items, _subject_outputs(shifted, head_dir, subject, inputs)
    )
    # every row held in the usual run: valid ones returned and met their contract
    here = [
        "raised" if "raised" in out else "holds" if item["has_contract"] else "returned"
        for item, out in zip(items, usual, strict=True)
    ]
    moved = [index for index, (a, b) in enumerate(zip(here, there, strict=True)) if a != b]
    if not moved:
        return []
    parent = _parent_partition_moves(context, shifted, ref, subject, items)
    described = shifted.env.runner.described()
    return [
        context.finding(
            Verdict.REJECT,
            ref,
            f"partition {items[i]['id']}: behaviour depends on how it is run: on the head's "
            f"code its contract {here[i]} in the usual environment and {there[i]} in the "
            f"shifted one ({described}), where the parent's code "
            f"{'gives the same in both' if parent is not None else 'has no such subject'}",
        )
        for i in moved
        if parent is None or i not in parent
    ]


def _parent_partition_moves(
    context: _Context, shifted: _Context, ref: str, subject: str, items: list[dict[str, Any]]
) -> set[int] | None:
    """The partition rows whose verdict also moves on the parent's code between the two
    environments; None when the parent has no package or no such subject to call."""
    parent_dir = context.env.parent_dir
    if parent_dir is None or context.package.path not in context.env.parent_packages:
        return None
    inputs = [item["input"] for item in items]
    try:
        usual = _subject_outputs(context, parent_dir, subject, inputs)
        there = _subject_outputs(shifted, parent_dir, subject, inputs)
    except (RunnerFailure, OracleMistake):
        return None
    here = _partition_verdicts(context, ref, items, usual)
    moved = _partition_verdicts(context, ref, items, there)
    return {index for index, (a, b) in enumerate(zip(here, moved, strict=True)) if a != b}


def _relations_hold(
    context: _Context, tree: Path, ref: str, subject: str, relations: list[dict[str, Any]]
) -> dict[str, list[bool]]:
    """Per relation, per input: does it hold on ``tree``? One subject call for the table."""
    batch: list[Any] = []
    for relation in relations:
        batch += relation["inputs"]
        if relation["compare"] == "equal":
            batch += relation["transformed"]
    outputs = iter(_subject_outputs(context, tree, subject, batch))
    holds: dict[str, list[bool]] = {}
    to_evaluate: list[tuple[str, dict[str, Any]]] = []
    for relation in relations:
        base = [next(outputs) for _ in relation["inputs"]]
        if relation["compare"] == "equal":
            after = [next(outputs) for _ in relation["transformed"]]
            holds[relation["id"]] = [
                "ok" in a and "ok" in b and canonical_text(a["ok"]) == canonical_text(b["ok"])
                for a, b in zip(base, after, strict=True)
            ]
        else:
            # an input whose subject raised fails the relation without a comparison
            holds[relation["id"]] = ["ok" in out for out in base]
            to_evaluate += [
                (relation["id"], {"id": relation["id"], "output": out["ok"], "input": x})
                for out, x in zip(base, relation["inputs"], strict=True)
                if "ok" in out
            ]
    if to_evaluate:
        request = {
            "role": "evaluate",
            "ref": ref,
            "kind": "relations",
            "items": [item for _, item in to_evaluate],
        }
        results = iter(context.run(request, context.env.head_dir)["results"])
        for relation_id, flags in holds.items():
            if any(rid == relation_id for rid, _ in to_evaluate):
                holds[relation_id] = [ok and next(results)["holds"] for ok in flags]
    return holds


def _relations(context: _Context) -> list[Finding]:
    findings: list[Finding] = []
    parent_dir = context.env.parent_dir
    if parent_dir is None:
        return findings
    parent_has_package = context.package.path in context.env.parent_packages
    for ref in context.row.relations:
        described = _describe(context, ref, "relations")
        relations = described["items"]
        head = _relations_hold(context, context.env.head_dir, ref, described["subject"], relations)
        parent = (
            _relations_hold(context, parent_dir, ref, described["subject"], relations)
            if parent_has_package
            else {rid: [True] * len(flags) for rid, flags in head.items()}
        )
        for relation in relations:
            relation_id = relation["id"]
            counts = Counter(
                "hold" if h else ("regress" if p else "preexisting")
                for p, h in zip(parent[relation_id], head[relation_id], strict=True)
            )
            context.stats.relations[f"{context.package.path}:{relation_id}"] = {
                "pairs": len(head[relation_id]),
                **{k: counts.get(k, 0) for k in ("hold", "regress", "preexisting")},
            }
            findings.append(_relation_finding(context, ref, relation_id, counts))
        findings += _shifted_relations(context, ref, described["subject"], relations, head)
    return findings


def _shifted_relations(
    context: _Context,
    ref: str,
    subject: str,
    relations: list[dict[str, Any]],
    usual: dict[str, list[bool]],
) -> list[Finding]:
    """The relations that hold on the head's code in the usual environment and fail on
    some of those inputs in the shifted one (``runtime/variants.py``): a reject, unless
    the parent's code fails there on the same inputs too."""
    if not any(any(flags) for flags in usual.values()):
        return []
    shifted = dataclasses.replace(context, env=context.env.shifted())
    there = _relations_hold(shifted, context.env.head_dir, ref, subject, relations)
    moved = {
        rid: [i for i, (a, b) in enumerate(zip(usual[rid], there[rid], strict=True)) if a and not b]
        for rid in usual
    }
    if not any(moved.values()):
        return []
    parent_dir = context.env.parent_dir
    parent = (
        _relations_hold(shifted, parent_dir, ref, subject, relations)
        if parent_dir is not None and context.package.path in context.env.parent_packages
        else None
    )
    described = shifted.env.runner.described()
    findings = []
    for rid, indexes in moved.items():
        unexcused = [i for i in indexes if parent is None or parent[rid][i]]
        if unexcused:
            findings.append(
                context.finding(
                    Verdict.REJECT,
                    ref,
                    f"relation {rid}: behaviour depends on how it is run: it holds on the "
                    f"head's code in the usual environment and fails for {len(unexcused)} of "
                    f"{len(usual[rid])} inputs in the shifted one ({described}), where the "
                    f"parent's code {'holds' if parent is not None else 'has no such package'}",
                )
            )
    return findings


def _relation_finding(
    context: _Context, ref: str, relation_id: str, counts: Counter[str]
) -> Finding:
    pairs = sum(counts.values())
    if counts["regress"]:
        return context.finding(
            Verdict.REJECT,
            ref,
            f"relation {relation_id} regress: holds on parent, fails on head for "
            f"{counts['regress']} of {pairs} inputs",
        )
    if counts["preexisting"]:
        return context.finding(
            Verdict.PREEXISTING,
            ref,
            f"relation {relation_id} fails on parent too "
            f"({counts['preexisting']} of {pairs} inputs): "
            "preexisting, not blocking",
        )
    return context.finding(Verdict.PASS, ref, f"relation {relation_id} holds on {pairs} inputs")


def _undefined_symbols(env: RowEnv, package: Package, symbols: list[str]) -> set[str]:
    """The ``module.name`` symbols that do not resolve in the head checkout.

    They resolve as Python resolves them: the child imports the module and
    looks the name up (re-exports, ``__all__``, submodules all count).
    """
    if not symbols:
        return set()
    directory = env.head_dir / package.path if package.path else env.head_dir
    answer = env.runner.run(
        {"role": "resolve", "symbols": symbols},
        directory,
        import_paths=env.import_paths(env.head_dir, package),
        checkout=env.head_dir,
    )
    return {symbol for symbol, found in zip(symbols, answer["defined"], strict=True) if not found}


def _accepted_assumptions(tree: Tree, package: Package) -> list[Assumption]:
    """The accepted items of the package's assumption register in ``tree`` (none without
    one)."""
    path = package.join(ASSUMPTIONS_FILE)
    text = _read(tree, path)
    if text is None:
        return []
    return [item for item in parse_assumptions(text, path) if item.status == "accepted"]


def _symbols(accepted: list[Assumption]) -> list[str]:
    """The ``module.name`` symbols the assumptions cite, each once."""
    return sorted({str(item.data["symbol"]) for item in accepted if item.data.get("symbol")})


def runs_children(rows: list[tuple[Package, Row]], head: Tree) -> bool:
    """Whether ``judge_rows`` starts a child for ``rows``: a row with a property, partition
    or relation, or an accepted assumption of their packages citing a symbol to resolve.
    Without one the rows read ``head`` alone, and their checkouts need no files."""
    if any(row.properties or row.partitions or row.relations for _, row in rows):
        return True
    packages = {package.path: package for package, _ in rows}
    return any(_symbols(_accepted_assumptions(head, p)) for p in packages.values())


def _assumption_findings(
    env: RowEnv, package: Package, partitions: list[dict[str, Any]] | None
) -> list[Finding]:
    """Accepted assumptions must be tested by a boundary or invalid row and name a real symbol.

    ``partitions`` is None when the package's partition tables could not be
    read; the run failure is already a reject, and no register verdict is made.
    """
    path = package.join(ASSUMPTIONS_FILE)
    accepted = _accepted_assumptions(env.head, package)
    guarded = {
        name
        for item in partitions or ()
        if item["kind"] in ("boundary", "invalid")
        for name in item["assumptions"]
    }
    symbols = _symbols(accepted)
    try:
        undefined = _undefined_symbols(env, package, symbols)
    except RunnerFailure as failure:
        return [
            Finding(
                Verdict.REJECT,
                Lane.LEDGER,
                path,
                f"assumption symbols could not be resolved: {failure}",
                package=package.path,
            )
        ]
    problems: list[tuple[int, str]] = []
    for item in accepted:
        where = f"{path}:{item.line}: assumption {item.id}"
        if partitions is not None and item.id not in guarded:
            problems.append(
                (
                    item.line,
                    f"{where} is accepted but no boundary or invalid partition row tests it: "
                    "decorative register",
                )
            )
        symbol = str(item.data.get("symbol", ""))
        if symbol in undefined:
            problems.append(
                (item.line, f"{where} cites {symbol}, which the head tree does not define")
            )
    return [
        Finding(Verdict.REJECT, Lane.LEDGER, path, problem, package=package.path, line=line)
        for line, problem in problems
    ]


def judge_rows(rows: list[tuple[Package, Row]], env: RowEnv) -> tuple[list[Finding], RuntimeStats]:
    """Run every selected row in ``env`` and judge the answers."""
    stats = RuntimeStats()
    findings: list[Finding] = []
    # None marks a package whose partition tables could not all be read.
    partitions: dict[str, list[dict[str, Any]] | None] = {}
    for package, row in rows:
        context = _Context(package, row, env, stats)
        partitions.setdefault(package.path, [])
        try:
            _judge_row(context, partitions, findings)
        except OracleMistake as mistake:
            raise _config_error(env, package, mistake) from None
        progress.advance()
    if env.first_reject:
        return findings, stats  # the register's findings are the package's, no row's
    packages = {package.path: package for package, _ in rows}
    for package_path, described in sorted(partitions.items()):
        findings.extend(_assumption_findings(env, packages[package_path], described))
    return findings, stats


def _config_error(env: RowEnv, package: Package, mistake: OracleMistake) -> ConfigError:
    """A mistake in an oracle file, or in the invariants.yaml reference that named it."""
    if not mistake.ref:
        return ConfigError(str(mistake), package.join(mistake.file), mistake.line)
    matrix = package.join(package.matrix_file)
    text = (_read(env.head, matrix) or b"").decode("utf-8", "replace")
    found = text.find(mistake.ref)
    line = text.count("\n", 0, found) + 1 if found >= 0 else None
    return ConfigError(str(mistake), matrix, line)


def _judge_row(
    context: _Context,
    partitions: dict[str, list[dict[str, Any]] | None],
    findings: list[Finding],
) -> None:
    """Properties, partitions and relations of one row; a run that fails rejects the row."""
    package, row = context.package, context.row
    try:
        findings.extend(_properties(context))
        for ref in row.partitions:
            found, items = _partition_table(context, ref)
            findings.extend(found)
            known = partitions[package.path]
            if known is not None:
                known.extend(items)
        findings.extend(_relations(context))
    except RunnerFailure as failure:
        partitions[package.path] = None
        findings.append(
            context.finding(
                Verdict.REJECT, package.matrix_file, f"row {row.id}: oracle run failed: {failure}"
            )
        )
