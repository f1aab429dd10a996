//! `hash_files`: BLAKE3 digests of many files, in parallel, with the GIL released.

use std::any::Any;
use std::fs::{self, File};
use std::io;
use std::panic::{self, AssertUnwindSafe};

use pyo3::prelude::*;
use rayon::prelude::*;

use crate::error::{CoreError, CoreResult};

/// Files at least this large are memory-mapped and hashed with several threads;
/// below it, a plain read is cheaper than setting up the mapping.
const MMAP_THRESHOLD: u64 = 1 << 20;

// pyo3 turns this doc comment into the Python docstring; the full contract is
// in `python/oracle_gate/_native.pyi`.
/// BLAKE3 digests of files, computed in parallel with the GIL released.
///
/// Returns one lowercase hex digest (64 characters) per path, in input order.
/// Raises oracle_gate.errors.TreeError naming the smallest failing path.
#[pyfunction]
pub fn hash_files(py: Python<'_>, paths: Vec<String>) -> PyResult<Vec<String>> {
    // Errors stay Rust values while detached and become a PyErr only once we hold
    // the GIL again.
    Ok(py.detach(|| hash_all(&paths))?)
}

/// Hashes every path in parallel; on failure returns the error of the smallest failing path.
pub fn hash_all(paths: &[String]) -> CoreResult<Vec<String>> {
    // The whole job is guarded as well as each file, because rayon itself panics
    // if it cannot start its thread pool.
    without_panics(None, || {
        let results: Vec<CoreResult<String>> = paths
            .par_iter()
            .map(|p| without_panics(Some(p), || hash_file(p)))
            .collect();
        let mut digests = Vec::with_capacity(results.len());
        let mut first_error: Option<CoreError> = None;
        for result in results {
            match result {
                Ok(digest) => digests.push(digest),
                Err(e) if first_error.as_ref().is_none_or(|f| e.path() < f.path()) => {
                    first_error = Some(e);
                }
                Err(_) => {}
            }
        }
        first_error.map_or(Ok(digests), Err)
    })
}

/// Runs `work`, turning a panic into `CoreError::Internal` about `path`, because a
/// panic reaching Python would surface as pyo3's `PanicException`, not a `GateError`.
fn without_panics<T>(path: Option<&str>, work: impl FnOnce() -> CoreResult<T>) -> CoreResult<T> {
    // `work` only reads shared data and owns what it mutates, so nothing half-updated
    // can be observed after an unwind.
    panic::catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|payload| {
        Err(CoreError::Internal {
            path: path.map(str::to_owned),
            detail: panic_detail(payload.as_ref()),
        })
    })
}

fn hash_file(path: &str) -> CoreResult<String> {
    let fail = |e: io::Error| classify_failure(path, &e);
    let file = File::open(path).map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    // Opening a directory read-only succeeds on Linux; only reading it fails.
    if meta.is_dir() {
        return Err(CoreError::IsDirectory {
            path: path.to_owned(),
        });
    }
    let mut hasher = blake3::Hasher::new();
    if meta.len() >= MMAP_THRESHOLD {
        // SAFETY: the mapping is read-only and lives only for this call. If another
        // process truncates the file meanwhile, reads may fault (SIGBUS); this is the
        // same trade-off `blake3::Hasher::update_mmap` makes, accepted for speed.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(fail)?;
        hasher.update_rayon(&map);
    } else {
        hasher.update_reader(&file).map_err(fail)?;
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// Inspects the filesystem once more to explain why `path` could not be hashed.
fn classify_failure(path: &str, err: &io::Error) -> CoreError {
    let is_symlink = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = fs::metadata(path);
    let target_missing = matches!(&target, Err(e) if e.kind() == io::ErrorKind::NotFound);
    let is_dir = target.is_ok_and(|m| m.is_dir());
    classify(path, is_symlink && target_missing, is_dir, err)
}

/// Picks the error from filesystem facts, in the order the contract lists them;
/// kept free of I/O so every branch can be tested, including as root.
fn classify(path: &str, broken_symlink: bool, is_dir: bool, err: &io::Error) -> CoreError {
    let path = path.to_owned();
    if broken_symlink {
        CoreError::BrokenSymlink { path }
    } else if err.kind() == io::ErrorKind::NotFound {
        CoreError::NotFound { path }
    } else if is_dir {
        CoreError::IsDirectory { path }
    } else if err.kind() == io::ErrorKind::PermissionDenied {
        CoreError::PermissionDenied { path }
    } else if err.raw_os_error() == Some(libc::ELOOP) {
        CoreError::SymlinkLoop { path }
    } else {
        CoreError::Unreadable {
            path,
            errno: err.raw_os_error(),
        }
    }
}

fn panic_detail(payload: &(dyn Any + Send)) -> String {
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
    use std::error::Error;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::path::Path;
    use tempfile::TempDir;

    type TestResult = Result<(), Box<dyn Error>>;

    /// A fresh temporary directory; every fixture path is built from it.
    fn tempdir() -> io::Result<TempDir> {
        tempfile::Builder::new().prefix("oracle-gate-").tempdir()
    }

    fn write(dir: &Path, name: &str, data: &[u8]) -> io::Result<String> {
        let path = dir.join(name);
        fs::write(&path, data)?;
        Ok(path.to_string_lossy().into_owned())
    }

    fn name_in(dir: &Path, name: &str) -> String {
        dir.join(name).to_string_lossy().into_owned()
    }

    /// The error `hash_all` reports for a single path.
    fn error_of(path: &str) -> Option<CoreError> {
        hash_all(&[path.to_owned()]).err()
    }

    #[test]
    fn digests_match_blake3_for_empty_and_abc() -> TestResult {
        let dir = tempdir()?;
        let empty = write(dir.path(), "empty", b"")?;
        let abc = write(dir.path(), "abc", b"abc")?;
        let digests = hash_all(&[empty, abc])?;
        assert_eq!(digests[0], blake3::hash(b"").to_hex().as_str());
        assert_eq!(digests[1], blake3::hash(b"abc").to_hex().as_str());
        // The published BLAKE3 test vector, so a wrong crate cannot agree with itself.
        assert_eq!(
            digests[1],
            "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
        );
        Ok(())
    }

    #[test]
    fn large_files_take_the_mmap_path_and_hash_the_same() -> TestResult {
        let dir = tempdir()?;
        let data: Vec<u8> = (0..MMAP_THRESHOLD as usize * 3 + 7)
            .map(|i| (i % 251) as u8)
            .collect();
        let big = write(dir.path(), "big", &data)?;
        assert_eq!(
            hash_all(&[big])?,
            [blake3::hash(&data).to_hex().to_string()]
        );
        Ok(())
    }

    #[test]
    fn digests_keep_input_order() -> TestResult {
        let dir = tempdir()?;
        let mut paths = Vec::new();
        let mut expected = Vec::new();
        // Reverse order and a duplicate, so sorting or deduplicating would show.
        for i in (0..50).rev().chain([7]) {
            let data = format!("file {i}");
            paths.push(write(dir.path(), &format!("f{i}"), data.as_bytes())?);
            expected.push(blake3::hash(data.as_bytes()).to_hex().to_string());
        }
        assert_eq!(hash_all(&paths)?, expected);
        assert_eq!(hash_all(&[])?, Vec::<String>::new());
        Ok(())
    }

    #[test]
    fn missing_file_is_reported_with_the_input_path() -> TestResult {
        let dir = tempdir()?;
        let missing = name_in(dir.path(), "nope");
        assert_eq!(
            error_of(&missing),
            Some(CoreError::NotFound { path: missing })
        );
        Ok(())
    }

    #[test]
    fn broken_symlink_is_not_reported_as_missing() -> TestResult {
        let dir = tempdir()?;
        let link = name_in(dir.path(), "link");
        symlink(dir.path().join("gone"), &link)?;
        assert_eq!(
            error_of(&link),
            Some(CoreError::BrokenSymlink { path: link })
        );
        Ok(())
    }

    #[test]
    fn directory_and_symlink_to_directory_are_rejected() -> TestResult {
        let dir = tempdir()?;
        let sub = name_in(dir.path(), "sub");
        fs::create_dir(&sub)?;
        let link = name_in(dir.path(), "link");
        symlink(&sub, &link)?;
        for path in [sub, link] {
            assert_eq!(error_of(&path), Some(CoreError::IsDirectory { path }));
        }
        Ok(())
    }

    #[test]
    fn symlink_loop_is_reported() -> TestResult {
        let dir = tempdir()?;
        let (a, b) = (name_in(dir.path(), "a"), name_in(dir.path(), "b"));
        symlink(&b, &a)?;
        symlink(&a, &b)?;
        assert_eq!(error_of(&a), Some(CoreError::SymlinkLoop { path: a }));
        Ok(())
    }

    #[test]
    fn unreadable_file_is_permission_denied_unless_privileged() -> TestResult {
        let dir = tempdir()?;
        let secret = write(dir.path(), "secret", b"x")?;
        fs::set_permissions(&secret, fs::Permissions::from_mode(0o000))?;
        if File::open(&secret).is_ok() {
            // Root (or CAP_DAC_OVERRIDE) reads it anyway; `classify` is tested below.
            eprintln!("skipped: running with privileges that ignore file modes");
            return Ok(());
        }
        assert_eq!(
            error_of(&secret),
            Some(CoreError::PermissionDenied { path: secret })
        );
        Ok(())
    }

    #[test]
    fn classify_follows_the_contract_order() {
        let e = io::Error::from_raw_os_error;
        let p = || "p".to_owned();
        let cases = [
            // A broken symlink opens with ENOENT, but is named as a broken link.
            (
                true,
                false,
                e(libc::ENOENT),
                CoreError::BrokenSymlink { path: p() },
            ),
            (
                false,
                false,
                e(libc::ENOENT),
                CoreError::NotFound { path: p() },
            ),
            // An unreadable directory is still reported as a directory.
            (
                false,
                true,
                e(libc::EACCES),
                CoreError::IsDirectory { path: p() },
            ),
            (
                false,
                false,
                e(libc::EACCES),
                CoreError::PermissionDenied { path: p() },
            ),
            (
                false,
                false,
                e(libc::EPERM),
                CoreError::PermissionDenied { path: p() },
            ),
            (
                false,
                false,
                e(libc::ELOOP),
                CoreError::SymlinkLoop { path: p() },
            ),
            (
                false,
                false,
                e(libc::EIO),
                CoreError::Unreadable {
                    path: p(),
                    errno: Some(libc::EIO),
                },
            ),
            (
                false,
                false,
                io::Error::other("no errno"),
                CoreError::Unreadable {
                    path: p(),
                    errno: None,
                },
            ),
        ];
        for (broken_symlink, is_dir, err, expected) in cases {
            assert_eq!(classify("p", broken_symlink, is_dir, &err), expected);
        }
    }

    #[test]
    fn smallest_failing_path_wins_whatever_the_input_order() -> TestResult {
        let dir = tempdir()?;
        let ok = write(dir.path(), "ok", b"fine")?;
        let a = name_in(dir.path(), "a-missing");
        let z = name_in(dir.path(), "z-dir");
        fs::create_dir(&z)?;
        for paths in [
            vec![z.clone(), ok.clone(), a.clone()],
            vec![a.clone(), z.clone(), ok.clone()],
        ] {
            let err = hash_all(&paths).err();
            assert_eq!(err, Some(CoreError::NotFound { path: a.clone() }));
        }
        Ok(())
    }

    #[test]
    fn a_panic_becomes_an_internal_error_for_that_path() {
        let err = without_panics::<()>(Some("f"), || panic!("boom {}", 1)).err();
        let expected = CoreError::Internal {
            path: Some("f".to_owned()),
            detail: "boom 1".to_owned(),
        };
        assert_eq!(err, Some(expected));
        assert_eq!(
            err.map(|e| e.to_string()),
            Some("internal error: boom 1".to_owned())
        );
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
