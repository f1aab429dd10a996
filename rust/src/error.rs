//! `CoreError`: every way the native core can fail, and its one conversion to a Python error.

use pyo3::PyErr;

// The Python hierarchy in `oracle_gate/errors.py` is the single source of truth, so
// `except TreeError` catches the same thing whichever backend ran.
pyo3::import_exception!(oracle_gate.errors, TreeError);
pyo3::import_exception!(oracle_gate.errors, SurfaceError);

/// A failure of the native core. Every variant names the input path as the caller gave it.
///
/// The messages are part of the contract: `oracle_gate._fallback` produces the same
/// strings, and the backend parity test compares them byte for byte.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CoreError {
    /// The path is a symlink whose target does not exist.
    #[error("broken symlink: its target does not exist")]
    BrokenSymlink { path: String },
    /// Nothing exists at the path.
    #[error("file does not exist")]
    NotFound { path: String },
    /// The path is a directory where a file was expected.
    #[error("is a directory, expected a file")]
    IsDirectory { path: String },
    /// The path is a FIFO, socket or device: reading one could block forever or
    /// never end, and a fixture is a file.
    #[error("not a regular file (a FIFO, socket or device)")]
    NotRegular { path: String },
    /// Opening or reading the path was not permitted.
    #[error("permission denied")]
    PermissionDenied { path: String },
    /// Resolving the path ran into a cycle of symlinks (`ELOOP`).
    #[error("symlink loop")]
    SymlinkLoop { path: String },
    /// Any other I/O failure, with the OS error number when there is one.
    #[error("{}", cannot_read("file", *.errno))]
    Unreadable { path: String, errno: Option<i32> },
    /// The root given to a tree walk does not exist.
    #[error("tree root does not exist")]
    RootMissing { path: String },
    /// The root given to a tree walk is not a directory.
    #[error("tree root is not a directory")]
    RootNotDirectory { path: String },
    /// A file or directory name is not UTF-8; `path` shows it with U+FFFD replacements.
    #[error("file name is not valid UTF-8")]
    NotUtf8Name { path: String },
    /// A directory was listed by its parent but was gone when the walk read it.
    #[error("vanished while the tree was walked")]
    Vanished { path: String },
    /// Listing a directory failed for a reason other than the ones above.
    #[error("{}", cannot_read("directory", *.errno))]
    DirUnreadable { path: String, errno: Option<i32> },
    /// A test file's assertion surface cannot be extracted: not UTF-8, does not
    /// parse, or nests too deeply (docs/surface.md §9). Raised as `SurfaceError`.
    #[error("{detail}")]
    Surface {
        path: String,
        line: u32,
        detail: String,
    },
    /// A bug: the surface extractor panicked on `path`. Raised as `SurfaceError`.
    #[error("internal error: {detail}")]
    SurfaceInternal { path: String, detail: String },
    /// A bug: the core panicked. `path` is the file being worked on, if known.
    #[error("internal error: {detail}")]
    Internal {
        path: Option<String>,
        detail: String,
    },
}

/// `cannot read <what>`, with the OS error number when there is one.
fn cannot_read(what: &str, errno: Option<i32>) -> String {
    match errno {
        Some(n) => format!("cannot read {what} (errno {n})"),
        None => format!("cannot read {what}"),
    }
}

impl CoreError {
    /// The input path the error is about, if any.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::BrokenSymlink { path }
            | Self::NotFound { path }
            | Self::IsDirectory { path }
            | Self::NotRegular { path }
            | Self::PermissionDenied { path }
            | Self::SymlinkLoop { path }
            | Self::Unreadable { path, .. }
            | Self::RootMissing { path }
            | Self::RootNotDirectory { path }
            | Self::NotUtf8Name { path }
            | Self::Vanished { path }
            | Self::DirUnreadable { path, .. }
            | Self::Surface { path, .. }
            | Self::SurfaceInternal { path, .. } => Some(path),
            Self::Internal { path, .. } => path.as_deref(),
        }
    }
}

impl From<CoreError> for PyErr {
    /// Raises `oracle_gate.errors.SurfaceError(message, path, line)` for surface
    /// failures and `TreeError(message, path, None)` for the rest (no line).
    fn from(err: CoreError) -> PyErr {
        let message = err.to_string();
        match err {
            CoreError::Surface { path, line, .. } => {
                SurfaceError::new_err((message, path, Some(line)))
            }
            CoreError::SurfaceInternal { path, .. } => {
                SurfaceError::new_err((message, path, None::<u32>))
            }
            other => {
                let path = other.path().map(str::to_owned);
                TreeError::new_err((message, path, None::<u32>))
            }
        }
    }
}

/// Shorthand for results of core functions.
pub type CoreResult<T> = Result<T, CoreError>;

/// All values in input order, or the error naming the smallest path, so that which
/// of several failures is reported never depends on thread scheduling.
pub(crate) fn first_error_or_all<T>(results: Vec<CoreResult<T>>) -> CoreResult<Vec<T>> {
    let mut values = Vec::with_capacity(results.len());
    let mut first_error: Option<CoreError> = None;
    for result in results {
        match result {
            Ok(value) => values.push(value),
            Err(e) if first_error.as_ref().is_none_or(|f| e.path() < f.path()) => {
                first_error = Some(e);
            }
            Err(_) => {}
        }
    }
    first_error.map_or(Ok(values), Err)
}

/// Runs `work`, turning a panic into `CoreError::Internal` about `path`, because a
/// panic reaching Python would surface as pyo3's `PanicException`, not a `GateError`.
pub(crate) fn without_panics<T>(
    path: Option<&str>,
    work: impl FnOnce() -> CoreResult<T>,
) -> CoreResult<T> {
    catch_panic(work, |detail| CoreError::Internal {
        path: path.map(str::to_owned),
        detail,
    })
}

/// Runs `work`; if it panics, returns the error `on_panic` builds from the panic's
/// message instead.
pub(crate) fn catch_panic<T>(
    work: impl FnOnce() -> CoreResult<T>,
    on_panic: impl FnOnce(String) -> CoreError,
) -> CoreResult<T> {
    // Callers' `work` only reads shared data and owns what it mutates, so nothing
    // half-updated can be observed after an unwind.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|payload| Err(on_panic(panic_detail(payload.as_ref()))))
}

/// The message a caught panic carried, for the `internal error` a panic becomes
/// instead of crossing into Python.
fn panic_detail(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyo3::prelude::*;
    use pyo3::types::PyTuple;
    use std::any::Any;
    use std::path::PathBuf;

    /// Imports `oracle_gate.errors` from this checkout's `python/` directory, as the
    /// built extension would find it next to itself.
    fn import_errors_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../python");
        // sys.path entries must be str; a pathlib.Path is ignored by the import system.
        let source = source.to_string_lossy().into_owned();
        py.import("sys")?
            .getattr("path")?
            .call_method1("insert", (0, source))?;
        py.import("oracle_gate.errors")
    }

    #[test]
    fn messages_match_the_contract() {
        let p = || "a/b".to_owned();
        let cases = [
            (
                CoreError::BrokenSymlink { path: p() },
                "broken symlink: its target does not exist",
            ),
            (CoreError::NotFound { path: p() }, "file does not exist"),
            (
                CoreError::IsDirectory { path: p() },
                "is a directory, expected a file",
            ),
            (
                CoreError::NotRegular { path: p() },
                "not a regular file (a FIFO, socket or device)",
            ),
            (
                CoreError::PermissionDenied { path: p() },
                "permission denied",
            ),
            (CoreError::SymlinkLoop { path: p() }, "symlink loop"),
            (
                CoreError::RootMissing { path: p() },
                "tree root does not exist",
            ),
            (
                CoreError::RootNotDirectory { path: p() },
                "tree root is not a directory",
            ),
            (
                CoreError::NotUtf8Name { path: p() },
                "file name is not valid UTF-8",
            ),
            (
                CoreError::Vanished { path: p() },
                "vanished while the tree was walked",
            ),
            (
                CoreError::DirUnreadable {
                    path: p(),
                    errno: Some(5),
                },
                "cannot read directory (errno 5)",
            ),
            (
                CoreError::Unreadable {
                    path: p(),
                    errno: Some(5),
                },
                "cannot read file (errno 5)",
            ),
            (
                CoreError::Unreadable {
                    path: p(),
                    errno: None,
                },
                "cannot read file",
            ),
        ];
        for (err, message) in cases {
            assert_eq!(err.to_string(), message);
            assert_eq!(err.path(), Some("a/b"));
        }
    }

    /// A position for every variant; the match has no wildcard, so adding a variant
    /// does not compile until it is given one, and then the test below needs a sample.
    fn variant_index(err: &CoreError) -> usize {
        match err {
            CoreError::BrokenSymlink { .. } => 0,
            CoreError::NotFound { .. } => 1,
            CoreError::IsDirectory { .. } => 2,
            CoreError::NotRegular { .. } => 3,
            CoreError::PermissionDenied { .. } => 4,
            CoreError::SymlinkLoop { .. } => 5,
            CoreError::Unreadable { .. } => 6,
            CoreError::RootMissing { .. } => 7,
            CoreError::RootNotDirectory { .. } => 8,
            CoreError::NotUtf8Name { .. } => 9,
            CoreError::Vanished { .. } => 10,
            CoreError::DirUnreadable { .. } => 11,
            CoreError::Surface { .. } => 12,
            CoreError::SurfaceInternal { .. } => 13,
            CoreError::Internal { .. } => 14,
        }
    }

    /// An error, and the Python class, path, line and `str()` it must become.
    type Sample = (
        CoreError,
        &'static str,
        Option<&'static str>,
        Option<u32>,
        &'static str,
    );

    /// One sample of every variant.
    fn samples() -> Vec<Sample> {
        let p = || "d/x.txt".to_owned();
        vec![
            (
                CoreError::BrokenSymlink { path: p() },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: broken symlink: its target does not exist",
            ),
            (
                CoreError::NotFound { path: p() },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: file does not exist",
            ),
            (
                CoreError::IsDirectory { path: p() },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: is a directory, expected a file",
            ),
            (
                CoreError::NotRegular { path: p() },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: not a regular file (a FIFO, socket or device)",
            ),
            (
                CoreError::PermissionDenied { path: p() },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: permission denied",
            ),
            (
                CoreError::SymlinkLoop { path: p() },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: symlink loop",
            ),
            (
                CoreError::Unreadable {
                    path: p(),
                    errno: Some(5),
                },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: cannot read file (errno 5)",
            ),
            (
                CoreError::RootMissing { path: p() },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: tree root does not exist",
            ),
            (
                CoreError::RootNotDirectory { path: p() },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: tree root is not a directory",
            ),
            (
                CoreError::NotUtf8Name { path: p() },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: file name is not valid UTF-8",
            ),
            (
                CoreError::Vanished { path: p() },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: vanished while the tree was walked",
            ),
            (
                CoreError::DirUnreadable {
                    path: p(),
                    errno: None,
                },
                "TreeError",
                Some("d/x.txt"),
                None,
                "d/x.txt: cannot read directory",
            ),
            (
                CoreError::Surface {
                    path: p(),
                    line: 7,
                    detail: "invalid syntax".to_owned(),
                },
                "SurfaceError",
                Some("d/x.txt"),
                Some(7),
                "d/x.txt:7: invalid syntax",
            ),
            (
                CoreError::SurfaceInternal {
                    path: p(),
                    detail: "boom".to_owned(),
                },
                "SurfaceError",
                Some("d/x.txt"),
                None,
                "d/x.txt: internal error: boom",
            ),
            (
                CoreError::Internal {
                    path: None,
                    detail: "boom".to_owned(),
                },
                "TreeError",
                None,
                None,
                "internal error: boom",
            ),
        ]
    }

    #[test]
    fn the_samples_cover_every_variant() {
        let mut seen: Vec<usize> = samples().iter().map(|s| variant_index(&s.0)).collect();
        seen.sort_unstable();
        seen.dedup();
        let expected: Vec<usize> = (0..=*seen.last().unwrap_or(&0)).collect();
        assert_eq!(seen, expected);
        assert_eq!(seen.len(), samples().len());
    }

    #[test]
    fn every_variant_becomes_its_python_error() -> PyResult<()> {
        Python::initialize();
        Python::attach(|py| {
            let errors = import_errors_module(py)?;
            for (err, class, path, line, shown) in samples() {
                let py_err: PyErr = err.into();
                let value = py_err.value(py);
                assert!(
                    value.is_instance(&errors.getattr(class)?)?,
                    "{shown}: not a {class}"
                );
                assert_eq!(
                    value
                        .getattr("path")?
                        .extract::<Option<String>>()?
                        .as_deref(),
                    path
                );
                assert_eq!(value.getattr("line")?.extract::<Option<u32>>()?, line);
                assert_eq!(value.str()?.to_string(), shown);
                let args = value.getattr("args")?.cast_into::<PyTuple>()?;
                assert_eq!(args.len(), 3);
            }
            Ok(())
        })
    }

    #[test]
    fn panic_payloads_of_any_type_are_described() {
        let payload: Box<dyn Any + Send> = Box::new("static boom");
        assert_eq!(panic_detail(payload.as_ref()), "static boom");
        let payload: Box<dyn Any + Send> = Box::new(42);
        assert_eq!(
            panic_detail(payload.as_ref()),
            "panic with a non-string payload"
        );
    }
}
