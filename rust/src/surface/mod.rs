//! `extract_units`, `extract_units_many`: the assertion surface of test files
//! (docs/surface.md), byte-identical to `oracle_gate.surface.extract_units`.
//!
//! Files are parsed with `ruff_python_parser` and extracted in parallel on a
//! dedicated thread pool with the GIL released. Whatever the input, nothing
//! panics into Python and nothing overflows the stack: syntax trees deeper than
//! CPython could build are refused, and rendering stops at the depth limit.

mod annotation;
mod literal;
mod printer;
mod source;
mod units;

use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use rayon::prelude::*;
use ruff_python_ast::{ModModule, PythonVersion};
use ruff_python_parser::{Mode, ParseOptions, Parsed};
use ruff_text_size::Ranged;

use crate::error::{catch_panic, first_error_or_all, CoreError, CoreResult};
use source::{LineIndex, Refusal};

/// Units of one file: `(key, canonical text)` pairs sorted by key.
pub type Units = Vec<(String, String)>;

/// Worker threads get this much stack: enough for trees up to
/// `source::MAX_TREE_DEPTH` levels in every recursive pass, with a wide margin.
const WORKER_STACK: usize = 64 << 20;

/// What the running interpreter accepts, so both backends refuse the same files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The Python version whose syntax is accepted (`sys.version_info[:2]`).
    pub target: PythonVersion,
    /// `sys.get_int_max_str_digits()`: longest decimal int literal, 0 for no limit.
    pub int_max_str_digits: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            target: PythonVersion::PY311,
            int_max_str_digits: 4300,
        }
    }
}

impl Options {
    /// Reads the running interpreter's version and int-digit limit.
    fn from_interpreter(py: Python<'_>) -> PyResult<Self> {
        let sys = py.import("sys")?;
        let version = sys.getattr("version_info")?;
        let major: u8 = version.get_item(0)?.extract()?;
        let minor: u8 = version.get_item(1)?.extract()?;
        let int_max_str_digits = match sys.getattr("get_int_max_str_digits") {
            Ok(get) => get.call0()?.extract()?,
            Err(_) => 0,
        };
        Ok(Self {
            target: PythonVersion { major, minor },
            int_max_str_digits,
        })
    }
}

// pyo3 turns these doc comments into the Python docstrings; the full contract is
// in `python/oracle_gate/_native.pyi`.
/// The assertion surface of one Python test file (docs/surface.md).
///
/// Returns (key, canonical_text) pairs sorted by key. Raises
/// oracle_gate.errors.SurfaceError(message, path, line) when the source is not
/// UTF-8, does not parse, or nests too deeply.
#[pyfunction]
pub fn extract_units(py: Python<'_>, source: PyBackedBytes, path: String) -> PyResult<Units> {
    let options = Options::from_interpreter(py)?;
    let prepared = prepare(py, &source, &path)?;
    let result = py.detach(|| on_pool(|| run_prepared(&prepared, &path, &options)));
    Ok(result?)
}

/// The assertion surfaces of many files, extracted in parallel with the GIL released.
///
/// Takes (source, path) pairs and returns one list of (key, canonical_text)
/// pairs per file, in input order. Raises oracle_gate.errors.SurfaceError for
/// the smallest failing path.
#[pyfunction]
pub fn extract_units_many(
    py: Python<'_>,
    items: Vec<(PyBackedBytes, String)>,
) -> PyResult<Vec<Units>> {
    let options = Options::from_interpreter(py)?;
    let prepared = items
        .iter()
        .map(|(source, path)| prepare(py, source, path))
        .collect::<PyResult<Vec<_>>>()?;
    let result = py.detach(|| {
        on_pool(|| {
            let results: Vec<CoreResult<Units>> = prepared
                .par_iter()
                .zip(items.par_iter())
                .map(|(source, (_, path))| run_prepared(source, path, &options))
                .collect();
            first_error_or_all(results)
        })
    });
    Ok(result?)
}

/// A file's bytes as the extractor reads them (docs/surface.md §2).
enum Prepared<'s> {
    /// No coding cookie: the bytes themselves (UTF-8, maybe with a BOM).
    Raw(&'s [u8]),
    /// A coding cookie: decoded by Python's own codecs, handed over as UTF-8.
    Decoded(Vec<u8>),
    /// The declared encoding is refused, or the bytes do not decode.
    Refused(String, u32, String),
}

/// Whether one of the first two lines could hold a PEP 263 coding cookie.
fn may_declare_encoding(source: &[u8]) -> bool {
    source
        .split(|&b| b == b'\n')
        .take(2)
        .any(|line| line.windows(6).any(|w| w == b"coding"))
}

/// Decodes a file with a coding cookie through `oracle_gate.surface.utf8_source`,
/// so both backends read exactly the text Python runs; Rust has no codec tables.
fn prepare<'s>(py: Python<'_>, source: &'s [u8], path: &str) -> PyResult<Prepared<'s>> {
    if !may_declare_encoding(source) {
        return Ok(Prepared::Raw(source));
    }
    let helper = py.import("oracle_gate.surface")?.getattr("utf8_source")?;
    match helper.call1((pyo3::types::PyBytes::new(py, source), path)) {
        Ok(decoded) => Ok(Prepared::Decoded(decoded.extract()?)),
        Err(err) if err.is_instance_of::<crate::error::SurfaceError>(py) => {
            let value = err.value(py);
            let message: String = value.getattr("message")?.extract()?;
            let line: Option<u32> = value.getattr("line")?.extract()?;
            Ok(Prepared::Refused(
                path.to_owned(),
                line.unwrap_or(1),
                message,
            ))
        }
        Err(err) => Err(err),
    }
}

fn run_prepared(prepared: &Prepared<'_>, path: &str, options: &Options) -> CoreResult<Units> {
    match prepared {
        Prepared::Raw(source) => guarded(path, || extract(source, path, options)),
        Prepared::Decoded(source) => guarded(path, || extract(source, path, options)),
        Prepared::Refused(path, line, detail) => Err(CoreError::Surface {
            path: path.clone(),
            line: *line,
            detail: detail.clone(),
        }),
    }
}

/// The units of one file, or `CoreError::Surface` naming `path` and the line.
pub fn extract(source: &[u8], path: &str, options: &Options) -> CoreResult<Units> {
    extract_text(source, options).map_err(|refusal| CoreError::Surface {
        path: path.to_owned(),
        line: refusal.line,
        detail: refusal.message,
    })
}

fn extract_text(source: &[u8], options: &Options) -> Result<Units, Refusal> {
    let text = source::decode(source)?;
    let parse_options = ParseOptions::from(Mode::Module).with_target_version(options.target);
    let parsed = ruff_python_parser::parse_unchecked(text, parse_options);
    let Some(parsed) = parsed.try_into_module() else {
        return Err(Refusal {
            message: "does not parse as Python: not a module".to_owned(),
            line: 1,
        });
    };
    let lines = LineIndex::new(text);
    let scan = source::scan_tree(parsed.syntax(), text, options.target, &lines);
    let deep = scan.too_deep;
    let result = check_and_extract(&parsed, text, options, scan, &lines);
    drop_tree(parsed, deep, text.len());
    result
}

fn check_and_extract(
    parsed: &Parsed<ModModule>,
    text: &str,
    options: &Options,
    scan: source::TreeScan,
    lines: &LineIndex,
) -> Result<Units, Refusal> {
    let refuse = |reason: String, start| Refusal {
        message: format!("does not parse as Python: {reason}"),
        line: lines.line(start),
    };
    if let Some(error) = parsed.errors().iter().min_by_key(|e| e.location.start()) {
        return Err(refuse(
            first_line(&error.error.to_string()),
            error.location.start(),
        ));
    }
    if let Some(error) = parsed
        .unsupported_syntax_errors()
        .iter()
        .min_by_key(|e| e.start())
    {
        return Err(refuse(first_line(&error.to_string()), error.start()));
    }
    source::check_token_limits(parsed, lines)?;
    check_int_digits(parsed, text, options.int_max_str_digits, lines)?;
    // The extraction recurses over the tree, so a too-deep tree stops here.
    if scan.too_deep {
        return Err(Refusal {
            message: "does not parse as Python: nests too deeply".to_owned(),
            line: 1,
        });
    }
    if let Some(refusal) = scan.fstring {
        return Err(refusal);
    }
    units::extract(parsed.syntax(), text, lines)
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("invalid syntax").to_owned()
}

/// CPython refuses decimal int literals longer than `sys.get_int_max_str_digits()`.
fn check_int_digits(
    parsed: &Parsed<ModModule>,
    text: &str,
    limit: usize,
    lines: &LineIndex,
) -> Result<(), Refusal> {
    if limit == 0 {
        return Ok(());
    }
    for token in parsed.tokens() {
        if token.kind() != ruff_python_ast::token::TokenKind::Int
            || token.range().len().to_usize() <= limit
        {
            continue;
        }
        let Some(literal) = text.get(token.start().to_usize()..token.end().to_usize()) else {
            continue;
        };
        let lower = literal.to_ascii_lowercase();
        if lower.starts_with("0x") || lower.starts_with("0o") || lower.starts_with("0b") {
            continue;
        }
        let digits = literal.bytes().filter(u8::is_ascii_digit).count();
        if digits > limit {
            return Err(Refusal {
                message: format!(
                    "does not parse as Python: Exceeds the limit ({limit} digits) for integer string conversion: value has {digits} digits"
                ),
                line: lines.line(token.start()),
            });
        }
    }
    Ok(())
}

/// Frees a syntax tree. Freeing recurses once per level, so a tree deeper than
/// the limit is freed on a stack sized for its worst case (one level per source
/// byte), or leaked when that stack would exceed 1 GiB.
fn drop_tree(parsed: Parsed<ModModule>, deep: bool, source_len: usize) {
    const PER_LEVEL: usize = 512;
    const CAP: usize = 1 << 30;
    if !deep {
        drop(parsed);
        return;
    }
    match source_len
        .checked_mul(PER_LEVEL)
        .filter(|&size| size <= CAP)
    {
        Some(size) => stacker::grow(size.max(1 << 20), move || drop(parsed)),
        None => std::mem::forget(parsed),
    }
}

/// Runs `work` on the surface thread pool (big stacks), or reports why the pool is missing.
fn on_pool<T: Send>(work: impl FnOnce() -> CoreResult<T> + Send) -> CoreResult<T> {
    static POOL: OnceLock<Result<rayon::ThreadPool, String>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .stack_size(WORKER_STACK)
            .thread_name(|i| format!("oracle-gate-surface-{i}"))
            .build()
            .map_err(|e| e.to_string())
    });
    match pool {
        Ok(pool) => pool.install(work),
        Err(detail) => Err(CoreError::SurfaceInternal {
            path: String::new(),
            detail: format!("cannot start the surface thread pool: {detail}"),
        }),
    }
}

/// Runs `work`, turning a panic into `CoreError::SurfaceInternal` about `path`.
fn guarded<T>(path: &str, work: impl FnOnce() -> CoreResult<T>) -> CoreResult<T> {
    catch_panic(work, |detail| CoreError::SurfaceInternal {
        path: path.to_owned(),
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    type TestResult = Result<(), String>;

    fn run(source: &[u8]) -> CoreResult<Units> {
        on_pool(|| guarded("t.py", || extract(source, "t.py", &Options::default())))
    }

    fn refusal(source: &[u8]) -> Result<(u32, String), String> {
        match run(source) {
            Err(CoreError::Surface { line, detail, path }) if path == "t.py" => Ok((line, detail)),
            other => Err(format!("{other:?}")),
        }
    }

    /// The shared fixture directory of this crate's tests.
    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../docs")
            .join(name)
    }

    #[test]
    fn the_spec_examples_render_as_documented() -> TestResult {
        let spec = std::fs::read_to_string(fixture("surface.md")).map_err(|e| e.to_string())?;
        let sources: Vec<&str> = spec
            .split("```python surface-example\n")
            .skip(1)
            .filter_map(|s| s.split("```").next())
            .collect();
        let expected: Vec<&str> = spec
            .split("```text surface-expected\n")
            .skip(1)
            .filter_map(|s| s.split("```").next())
            .collect();
        if sources.is_empty() || sources.len() != expected.len() {
            return Err("spec examples not found".into());
        }
        for (source, want) in sources.iter().zip(expected) {
            let units = run(source.as_bytes()).map_err(|e| e.to_string())?;
            let got: String = units
                .iter()
                .map(|(k, t)| format!("== {k}\n{t}\n"))
                .collect();
            if got != want {
                return Err(format!("got:\n{got}\nwant:\n{want}"));
            }
        }
        Ok(())
    }

    #[test]
    fn syntax_errors_name_their_line() -> TestResult {
        let (line, detail) = refusal(b"def test_a():\n    pass\n\ndef test_b(:\n    pass\n")?;
        if line == 4 && detail.starts_with("does not parse as Python: ") {
            Ok(())
        } else {
            Err(format!("{line}: {detail}"))
        }
    }

    #[test]
    fn syntax_newer_than_the_target_is_refused() -> TestResult {
        let (line, _) = refusal(b"x = 1\ntype X = int\n")?;
        if line != 2 {
            return Err(format!("line {line}"));
        }
        let newer = Options {
            target: PythonVersion::PY312,
            int_max_str_digits: 0,
        };
        extract(b"type X = int\n", "t.py", &newer).map_err(|e| e.to_string())?;
        Ok(())
    }

    #[test]
    fn malformed_input_fails_closed_without_panicking() -> TestResult {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"x = '\xff'\n".to_vec(), "is not valid UTF-8"),
            (b"x = 1\0\n".to_vec(), "null byte"),
            (
                format!("x = {}\n", "1".repeat(4301)).into_bytes(),
                "Exceeds the limit",
            ),
            (
                format!("x = {}x\n", "-".repeat(200_000)).into_bytes(),
                "nests too deeply",
            ),
            (
                format!("x = {}\n", "a.".repeat(100_000) + "b").into_bytes(),
                "nests too deeply",
            ),
            (
                format!("x = {}x{}\n", "(".repeat(5000), ")".repeat(5000)).into_bytes(),
                "does not parse",
            ),
            (b"\xef\xbb\xbf\xef\xbb\xbfx".to_vec(), "does not parse"),
        ];
        for (source, want) in cases {
            let (_, detail) = refusal(&source)?;
            if !detail.contains(want) {
                return Err(format!("{detail:?} does not contain {want:?}"));
            }
        }
        Ok(())
    }

    #[test]
    fn a_panic_becomes_a_surface_internal_error() -> TestResult {
        let result: CoreResult<()> = guarded("p.py", || panic!("boom"));
        match result {
            Err(CoreError::SurfaceInternal { path, detail })
                if path == "p.py" && detail == "boom" =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn surface_errors_become_the_python_surface_error() -> PyResult<()> {
        Python::initialize();
        Python::attach(|py| {
            let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../python");
            py.import("sys")?
                .getattr("path")?
                .call_method1("insert", (0, source.to_string_lossy().into_owned()))?;
            let surface_error = py.import("oracle_gate.errors")?.getattr("SurfaceError")?;
            let err: PyErr = CoreError::Surface {
                path: "t.py".to_owned(),
                line: 3,
                detail: "is not valid UTF-8".to_owned(),
            }
            .into();
            let value = err.value(py);
            assert!(value.is_instance(&surface_error)?);
            assert_eq!(value.str()?.to_string(), "t.py:3: is not valid UTF-8");
            let err: PyErr = CoreError::SurfaceInternal {
                path: "t.py".to_owned(),
                detail: "boom".to_owned(),
            }
            .into();
            let value = err.value(py);
            assert!(value.is_instance(&surface_error)?);
            assert_eq!(value.str()?.to_string(), "t.py: internal error: boom");
            Ok(())
        })
    }
}
