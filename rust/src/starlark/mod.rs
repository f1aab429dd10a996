//! `evaluate_build_files`: BUILD files evaluated as Starlark, in parallel with the GIL released.
//!
//! The package graph (`python/oracle_gate/graph/`) turns the labels recorded
//! here into edges; `docs/selection.md` says what is evaluated and what is opaque.

mod checked;
mod edges;
mod eval;
mod gate;
mod guess;
mod limits;
mod matrix;
mod plain;
mod tables;
mod values;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use edges::{edges, Edges, Repositories};
use eval::{evaluate_all, BuildInput, Outcome};
use gate::{GateCall, GateValue, Gates};
use matrix::{gate_matrix, package_files, GateMatrix};
use rayon::prelude::*;
use values::TreeFiles;

/// Starlark recursion (a deep macro, a long `+` chain) needs more than rayon's default stack.
const WORKER_STACK: usize = 64 << 20;

/// Per BUILD file: the `.bzl` files reached, error, the lines that hold only rule calls,
/// the gate calls (`NativeGates`) or None, the package's files when it calls a gate,
/// the gate's matrix (`matrix_to_py`) or None.
type PyOutcome<'py> = (
    Bound<'py, PyAny>,
    String,
    Bound<'py, PyAny>,
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
    Option<Bound<'py, PyAny>>,
);

/// Every BUILD file's edges as a reverse adjacency `{target: {source: why}}`, the
/// computed labels' `(BUILD index, package prefix, why, repository root)`, where the graph
/// over-approximates `(BUILD path, why)`, and each file's outcome: a monorepo has
/// 100,000s of edges, and making their Python objects is serial work.
type PyEvaluation<'py> = (
    Bound<'py, PyDict>,
    Vec<(usize, String, String, String)>,
    Vec<(String, String)>,
    Vec<PyOutcome<'py>>,
);

// pyo3 turns this doc comment into the Python docstring; the full contract is
// in `python/oracle_gate/_native.pyi`.
/// BUILD files evaluated as Starlark with the repository's own .bzl files, in parallel.
///
/// Returns the edges their rules' labels make, the computed labels among them,
/// where they over-approximate, and per BUILD file in input order: the .bzl files
/// it loads (transitively), an error ("" if none), the line ranges that hold only
/// calls of functions other than oracle_gate, the gate calls and, given the tree's
/// files, the matrix of a gate written plainly right.
#[pyfunction]
// Python calls it with keywords; a struct of options would only move them.
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (
    builds, bzl, own_names, files = None, interpret_all = false, named = Vec::new(),
    unknown = String::new(), links = Vec::new(), ignored = Vec::new()
))]
pub fn evaluate_build_files<'py>(
    py: Python<'py>,
    builds: Vec<(String, String, String, PyBackedBytes)>,
    bzl: Vec<(String, PyBackedBytes)>,
    own_names: Vec<(String, Vec<String>)>,
    files: Option<Vec<PyBackedStr>>,
    interpret_all: bool,
    named: Vec<(String, String)>,
    unknown: String,
    links: Vec<String>,
    ignored: Vec<String>,
) -> PyResult<PyEvaluation<'py>> {
    let tree = files.as_ref().map(|files| TreeFiles {
        files: files.iter().map(|path| &**path).collect(),
        build_dirs: builds.iter().map(|b| directory(&b.0)).collect(),
        links: links.iter().map(String::as_str).collect(),
        ignored: ignored.iter().map(String::as_str).collect(),
    });
    let (outcomes, edges, matrices) = py.detach(|| {
        let sources: HashMap<String, String> = bzl
            .iter()
            .map(|(path, text)| (path.clone(), String::from_utf8_lossy(text).into_owned()))
            .collect();
        let repositories = Repositories {
            own: own_names.into_iter().collect(),
            named: named.into_iter().collect(),
            unknown,
        };
        let inputs: Vec<Result<BuildInput, String>> = builds
            .iter()
            .map(|(path, package, workspace, text)| {
                let content = std::str::from_utf8(text)
                    .map_err(|_| "the BUILD file is not UTF-8".to_owned())?;
                Ok(BuildInput {
                    path,
                    package,
                    workspace,
                    content,
                })
            })
            .collect();
        on_pool(|| {
            let outcomes = evaluate_inputs(
                &inputs,
                &sources,
                &repositories,
                tree.as_ref(),
                interpret_all,
            );
            let edges = all_edges(&builds, &outcomes, &repositories);
            // A panic building matrices leaves every gate to gate_matrix, not a crash.
            let matrices = catch_unwind(AssertUnwindSafe(|| {
                matrices(&builds, &outcomes, tree.as_ref())
            }))
            .unwrap_or_else(|_| vec![None; outcomes.len()]);
            (outcomes, edges, matrices)
        })
    });
    let (dependents, computed, approximate) = edges_to_py(py, &builds, edges)?;
    let empty = PyTuple::empty(py).into_any();
    let outcomes = outcomes
        .into_iter()
        .zip(matrices)
        .map(|(outcome, gate)| {
            let loads = if outcome.loads.is_empty() {
                empty.clone()
            } else {
                PyTuple::new(py, outcome.loads)?.into_any()
            };
            let gates = outcome
                .gates
                .map(|gates| Bound::new(py, NativeGates { gates }).map(Bound::into_any))
                .transpose()?;
            let rule_lines = if outcome.rule_lines.is_empty() {
                empty.clone()
            } else {
                PyTuple::new(py, outcome.rule_lines)?.into_any()
            };
            let (owned, matrix) = match gate {
                Some(GateFiles { owned, matrix }) => (
                    Some(PyTuple::new(py, owned)?.into_any()),
                    matrix.as_ref().map(|m| matrix_to_py(py, m)).transpose()?,
                ),
                None => (None, None),
            };
            Ok((loads, outcome.error, rule_lines, gates, owned, matrix))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok((dependents, computed, approximate, outcomes))
}

/// The edges of every BUILD file as `evaluate_build_files` returns them: the exact
/// ones as a reverse adjacency (`{target: {source: why}}`, the first declaration of
/// an edge kept), with one string object per file's package and per target, however
/// many edges name them.
#[allow(clippy::type_complexity)]
fn edges_to_py<'py>(
    py: Python<'py>,
    builds: &[(String, String, String, PyBackedBytes)],
    edges: Vec<Edges>,
) -> PyResult<(
    Bound<'py, PyDict>,
    Vec<(usize, String, String, String)>,
    Vec<(String, String)>,
)> {
    let dependents = PyDict::new(py);
    let mut targets: HashMap<String, Bound<'py, PyDict>> = HashMap::new();
    let mut computed = Vec::new();
    let mut approximate = Vec::new();
    for (index, (found, build)) in edges.into_iter().zip(builds).enumerate() {
        approximate.extend(
            found
                .approximate
                .into_iter()
                .map(|why| (build.0.clone(), why)),
        );
        if found.edges.is_empty() {
            continue;
        }
        let source = PyString::new(py, directory(&build.0));
        for edge in found.edges {
            if edge.prefix {
                computed.push((index, edge.target, edge.why, edge.root));
                continue;
            }
            let inner = match targets.get(&edge.target) {
                Some(inner) => inner.clone(),
                None => {
                    let inner = PyDict::new(py);
                    dependents.set_item(&edge.target, &inner)?;
                    targets.insert(edge.target, inner.clone());
                    inner
                }
            };
            if !inner.contains(&source)? {
                inner.set_item(&source, edge.why)?;
            }
        }
    }
    Ok((dependents, computed, approximate))
}

/// `(repository, package, computed)` of what an absolute label can name, or None:
/// `bazel/labels.py`'s `label_ref`, which the graph's edges are resolved with here.
#[pyfunction]
pub fn label_ref(text: &str) -> Option<(String, String, bool)> {
    edges::label_ref(text).map(|r| (r.repo, r.package, r.prefix))
}

/// Each BUILD file's edges (`edges.rs`), from the records of its evaluation.
fn all_edges(
    builds: &[(String, String, String, PyBackedBytes)],
    outcomes: &[Outcome],
    repositories: &Repositories,
) -> Vec<Edges> {
    builds
        .par_iter()
        .zip(outcomes)
        .map(|((path, _, workspace, _), outcome)| {
            let found = &outcome.records;
            edges(found, path, directory(path), workspace, repositories)
        })
        .collect()
}

/// What the native core knows of a BUILD file's gate: the package's files, and
/// the matrix when its one gate is written plainly right (`matrix.rs`).
#[derive(Clone)]
struct GateFiles<'a> {
    /// Package-relative, sorted: the files `glob()` and the ledgers see.
    owned: Vec<&'a str>,
    matrix: Option<GateMatrix>,
}

/// Each BUILD file's `GateFiles`, for a file that calls a gate; none without the
/// tree's sorted `files`.
fn matrices<'a>(
    builds: &[(String, String, String, PyBackedBytes)],
    outcomes: &[Outcome],
    tree: Option<&'a TreeFiles<'_>>,
) -> Vec<Option<GateFiles<'a>>> {
    let Some(tree) = tree else {
        return vec![None; outcomes.len()];
    };
    builds
        .par_iter()
        .zip(outcomes)
        .map(|((path, package, workspace, _), outcome)| {
            let gates = outcome.gates.as_ref().filter(|g| !g.calls.is_empty())?;
            let owned = package_files(&tree.files, directory(path), &tree.build_dirs);
            let matrix = gate_matrix(gates, package, workspace, &owned);
            Some(GateFiles { owned, matrix })
        })
        .collect()
}

/// The directory of a repository-relative path ("" at the root).
fn directory(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// `(name, owners, tests, fixtures, deps, rows)`, a row `(id, globs, properties,
/// partitions, relations, fixtures, examples, seconds)`; `config/matrix.py` reads it.
fn matrix_to_py<'py>(py: Python<'py>, matrix: &GateMatrix) -> PyResult<Bound<'py, PyAny>> {
    let rows = matrix
        .rows
        .iter()
        .map(|row| {
            Ok(PyTuple::new(
                py,
                [
                    row.id.as_str().into_pyobject(py)?.into_any(),
                    PyTuple::new(py, &row.globs)?.into_any(),
                    PyTuple::new(py, &row.properties)?.into_any(),
                    PyTuple::new(py, &row.partitions)?.into_any(),
                    PyTuple::new(py, &row.relations)?.into_any(),
                    PyTuple::new(py, &row.fixtures)?.into_any(),
                    row.examples.into_pyobject(py)?.into_any(),
                    row.seconds.into_pyobject(py)?.into_any(),
                ],
            )?
            .into_any())
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(
        py,
        [
            matrix.name.as_str().into_pyobject(py)?.into_any(),
            PyTuple::new(py, &matrix.owners)?.into_any(),
            PyTuple::new(py, &matrix.tests)?.into_any(),
            PyTuple::new(py, &matrix.fixtures)?.into_any(),
            PyTuple::new(py, &matrix.deps)?.into_any(),
            PyTuple::new(py, rows)?.into_any(),
        ],
    )?
    .into_any())
}

/// A BUILD file's gate calls, made Python values only when asked: a monorepo has
/// thousands of gates, nearly all of whose matrices the native core builds itself.
#[pyclass(frozen, module = "oracle_gate._native")]
pub struct NativeGates {
    gates: Gates,
}

#[pymethods]
impl NativeGates {
    /// `(calls, invariant names)`; `bazel.read.native.gates_from_native` makes them `Call`s.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        gates_to_py(py, &self.gates)
    }

    /// The number of gate calls.
    fn __len__(&self) -> usize {
        self.gates.calls.len()
    }
}

/// `(calls, invariant names)`; `bazel.read.native.gates_from_native` makes them `Call`s.
fn gates_to_py<'py>(py: Python<'py>, gates: &Gates) -> PyResult<Bound<'py, PyAny>> {
    let calls = gates
        .calls
        .iter()
        .map(|call| call_to_py(py, call))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(
        py,
        [
            PyList::new(py, calls)?.into_any(),
            PyList::new(py, &gates.invariant_names)?.into_any(),
        ],
    )?
    .into_any())
}

/// `("c", function, line, args, [(name, value, line)])`.
fn call_to_py<'py>(py: Python<'py>, call: &GateCall) -> PyResult<Bound<'py, PyAny>> {
    let args = call
        .args
        .iter()
        .map(|value| value_to_py(py, value))
        .collect::<PyResult<Vec<_>>>()?;
    let kwargs = call
        .kwargs
        .iter()
        .map(|(name, value, line)| {
            Ok(PyTuple::new(
                py,
                [
                    name.into_pyobject(py)?.into_any(),
                    value_to_py(py, value)?,
                    line.into_pyobject(py)?.into_any(),
                ],
            )?
            .into_any())
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(
        py,
        [
            "c".into_pyobject(py)?.into_any(),
            call.function.as_str().into_pyobject(py)?.into_any(),
            call.line.into_pyobject(py)?.into_any(),
            PyList::new(py, args)?.into_any(),
            PyList::new(py, kwargs)?.into_any(),
        ],
    )?
    .into_any())
}

/// A list is a Python list, a call a tagged tuple, a glob `("g", include, exclude, dirs, line)`.
fn value_to_py<'py>(py: Python<'py>, value: &GateValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        GateValue::Str(text) => text.as_str().into_pyobject(py)?.into_any(),
        GateValue::Int(number) => number.into_pyobject(py)?.into_any(),
        GateValue::Bool(flag) => flag.into_pyobject(py)?.to_owned().into_any(),
        GateValue::None => py.None().into_bound(py),
        GateValue::List(items) => PyList::new(
            py,
            items
                .iter()
                .map(|item| value_to_py(py, item))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        GateValue::Dict(entries) => {
            let dict = PyDict::new(py);
            for (key, item) in entries {
                dict.set_item(key, value_to_py(py, item)?)?;
            }
            dict.into_any()
        }
        GateValue::Call(call) => call_to_py(py, call)?,
        GateValue::Glob {
            include,
            exclude,
            exclude_directories,
            line,
        } => PyTuple::new(
            py,
            [
                "g".into_pyobject(py)?.into_any(),
                PyList::new(py, include)?.into_any(),
                PyList::new(py, exclude)?.into_any(),
                exclude_directories.into_pyobject(py)?.to_owned().into_any(),
                line.into_pyobject(py)?.into_any(),
            ],
        )?
        .into_any(),
    })
}

fn evaluate_inputs(
    inputs: &[Result<BuildInput<'_>, String>],
    sources: &HashMap<String, String>,
    repositories: &Repositories,
    tree: Option<&TreeFiles<'_>>,
    interpret_all: bool,
) -> Vec<Outcome> {
    let valid: Vec<BuildInput> = inputs
        .iter()
        .filter_map(|input| input.as_ref().ok().copied())
        .collect();
    let mut evaluated =
        evaluate_all(&valid, sources, repositories, tree, interpret_all).into_iter();
    inputs
        .iter()
        .map(|input| match input {
            Ok(_) => evaluated.next().unwrap_or_default(),
            Err(error) => Outcome {
                error: error.clone(),
                ..Outcome::default()
            },
        })
        .collect()
}

/// Panics on the evaluator's threads print nothing: `eval.rs` turns each into its file's
/// error (the gate prints one line). Any other thread's still reach the previous hook.
fn quiet_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let name = std::thread::current().name().unwrap_or_default().to_owned();
        if !name.starts_with(THREAD_NAME) {
            previous(info);
        }
    }));
}

/// How the evaluator's threads are named (`quiet_panics` knows them by it).
const THREAD_NAME: &str = "oracle-gate-starlark-";

/// Runs `work` on a pool whose threads have stacks big enough for deep Starlark.
fn on_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        quiet_panics();
        rayon::ThreadPoolBuilder::new()
            .stack_size(WORKER_STACK)
            .thread_name(|i| format!("{THREAD_NAME}{i}"))
            .build()
            .ok()
    });
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}
