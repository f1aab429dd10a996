//! `walk_tree`: every file of a working tree, found by a parallel walk.
//!
//! The walk goes one directory level at a time, listing all directories of a
//! level in parallel on the file-I/O pool (`hash::on_io_pool`). We measured the `ignore` crate's parallel
//! walker (with every filter turned off) at 1.2-1.7x slower than this on 50,000
//! files, and it needs no recursion, so a deep tree cannot overflow a stack
//! (docs/design.md, "Deviations").

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::path::PathBuf;

use pyo3::prelude::*;
use rayon::prelude::*;

use crate::error::{first_error_or_all, without_panics, CoreError, CoreResult};
use crate::hash::on_io_pool;

/// Directories that are never part of a package's oracle: VCS data, our own cache,
/// and interpreter byte code that tests leave behind. Keep in step with
/// `SKIPPED_DIRS` in `python/oracle_gate/_fallback.py`.
pub const SKIPPED_DIRS: [&str; 3] = [".git", ".oracle_gate", "__pycache__"];

// pyo3 turns this doc comment into the Python docstring; the full contract is
// in `python/oracle_gate/_native.pyi`.
/// Every file under root, as sorted repo-relative POSIX paths, walked in parallel
/// with the GIL released.
///
/// Skips directories named .git, .oracle_gate and __pycache__; lists symlinks
/// (to files or directories, broken or looping) as files without following them.
/// Raises oracle_gate.errors.TreeError naming the smallest failing path.
#[pyfunction]
pub fn walk_tree(py: Python<'_>, root: String) -> PyResult<Vec<String>> {
    Ok(py.detach(|| walk(&root))?)
}

/// A directory still to be listed: where it is, and its relative path ("" for the root).
struct Pending {
    path: PathBuf,
    rel: String,
}

/// What listing one directory found.
#[derive(Default)]
struct Listing {
    found: Vec<CoreResult<String>>,
    subdirs: Vec<Pending>,
}

/// The sorted relative paths of every file under `root`; on failure, the error of
/// the smallest failing path.
pub fn walk(root: &str) -> CoreResult<Vec<String>> {
    without_panics(None, || {
        check_root(root)?;
        let mut found = Vec::new();
        let mut level = vec![Pending {
            path: PathBuf::from(root),
            rel: String::new(),
        }];
        while !level.is_empty() {
            let listings: Vec<Listing> = on_io_pool(|| {
                level
                    .into_par_iter()
                    .map(|dir| list_dir(root, dir))
                    .collect()
            });
            level = Vec::new();
            for mut listing in listings {
                found.append(&mut listing.found);
                level.append(&mut listing.subdirs);
            }
        }
        let mut files = first_error_or_all(found)?;
        // Byte order of UTF-8 is code point order, which is how Python sorts str.
        files.sort_unstable();
        Ok(files)
    })
}

fn check_root(root: &str) -> CoreResult<()> {
    let path = root.to_owned();
    match fs::metadata(root) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(CoreError::RootNotDirectory { path }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(CoreError::RootMissing { path }),
        Err(e) => Err(dir_error(path, &e)),
    }
}

fn list_dir(root: &str, dir: Pending) -> Listing {
    let mut listing = Listing::default();
    let shown_dir = || {
        if dir.rel.is_empty() {
            root.to_owned()
        } else {
            dir.rel.clone()
        }
    };
    let entries = match fs::read_dir(&dir.path) {
        Ok(entries) => entries,
        Err(e) => {
            listing.found.push(Err(dir_error(shown_dir(), &e)));
            return listing;
        }
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                listing.found.push(Err(dir_error(shown_dir(), &e)));
                continue;
            }
        };
        let name = entry.file_name();
        let rel = match name.to_str() {
            Some(name) if dir.rel.is_empty() => Ok(name.to_owned()),
            Some(name) => Ok(format!("{}/{name}", dir.rel)),
            None => Err(format!("{}/{}", dir.rel, name.to_string_lossy())
                .trim_start_matches('/')
                .to_owned()),
        };
        // `file_type` needs no stat where the filesystem reports the type (d_type).
        // An entry that vanished before its type was known counts as a file, as
        // Python's `DirEntry.is_dir` does; hashing it then names it.
        let (is_dir, is_symlink) = match entry.file_type() {
            Ok(t) => (t.is_dir(), t.is_symlink()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => (false, false),
            Err(e) => {
                let shown = rel.clone().unwrap_or_else(|lossy| lossy);
                listing.found.push(Err(dir_error(shown, &e)));
                continue;
            }
        };
        // os.walk counts a symlink to a directory as a directory, so one named like
        // a skipped directory is skipped too; other links are listed, not followed.
        if is_skipped_name(&name)
            && (is_dir || (is_symlink && fs::metadata(entry.path()).is_ok_and(|m| m.is_dir())))
        {
            continue;
        }
        match rel {
            // Its contents would only repeat the error under a longer path.
            Err(lossy) => listing
                .found
                .push(Err(CoreError::NotUtf8Name { path: lossy })),
            Ok(rel) if is_dir => listing.subdirs.push(Pending {
                path: entry.path(),
                rel,
            }),
            Ok(rel) => listing.found.push(Ok(rel)),
        }
    }
    listing
}

fn is_skipped_name(name: &OsStr) -> bool {
    SKIPPED_DIRS
        .iter()
        .any(|skipped| name == OsStr::new(skipped))
}

/// Why a directory could not be listed, named by `path`.
fn dir_error(path: String, err: &io::Error) -> CoreError {
    match err.kind() {
        // Listed by its parent, gone (or replaced by a file) when we came to read it.
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => CoreError::Vanished { path },
        io::ErrorKind::PermissionDenied => CoreError::PermissionDenied { path },
        _ => CoreError::DirUnreadable {
            path,
            errno: err.raw_os_error(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    use std::os::unix::fs::symlink;
    use std::path::{Path, PathBuf};
    use tempfile::TempDir;

    type TestResult = Result<(), Box<dyn Error>>;

    /// A fresh temporary tree; every fixture path is built from it.
    fn tree(files: &[&str]) -> Result<(TempDir, String), Box<dyn Error>> {
        let dir = tempfile::Builder::new().prefix("oracle-gate-").tempdir()?;
        for name in files {
            let path = dir.path().join(name);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::write(&path, name.as_bytes())?;
        }
        let root = dir.path().to_string_lossy().into_owned();
        Ok((dir, root))
    }

    #[test]
    fn lists_files_sorted_and_relative_skipping_cache_directories() -> TestResult {
        let (_dir, root) = tree(&[
            "b.txt",
            "a/z.py",
            "a/b/c.json",
            ".git/HEAD",
            "pkg/.oracle_gate/stat-cache",
            "pkg/__pycache__/m.pyc",
            ".hidden",
            "pkg/.gitignore",
        ])?;
        fs::write(Path::new(&root).join("pkg/.gitignore"), "*\n")?;
        assert_eq!(
            walk(&root)?,
            [".hidden", "a/b/c.json", "a/z.py", "b.txt", "pkg/.gitignore"]
        );
        Ok(())
    }

    #[test]
    fn a_file_named_like_a_skipped_directory_is_listed() -> TestResult {
        let (_dir, root) = tree(&["sub/.git", "__pycache__"])?;
        assert_eq!(walk(&root)?, ["__pycache__", "sub/.git"]);
        Ok(())
    }

    #[test]
    fn symlinks_are_listed_not_followed() -> TestResult {
        let (dir, root) = tree(&["d/f.txt"])?;
        let at = |name: &str| dir.path().join(name);
        symlink(at("d"), at("to_dir"))?;
        symlink(at("d/f.txt"), at("to_file"))?;
        symlink(at("nowhere"), at("broken"))?;
        symlink(at("loop_b"), at("loop_a"))?;
        symlink(at("loop_a"), at("loop_b"))?;
        // A link to a directory named like a skipped one is skipped, as os.walk does.
        symlink(at("d"), at("__pycache__"))?;
        assert_eq!(
            walk(&root)?,
            ["broken", "d/f.txt", "loop_a", "loop_b", "to_dir", "to_file"]
        );
        Ok(())
    }

    #[test]
    fn a_deep_tree_is_walked_without_recursion() -> TestResult {
        let (dir, root) = tree(&[])?;
        let mut path = dir.path().to_path_buf();
        for _ in 0..300 {
            path.push("d");
        }
        fs::create_dir_all(&path)?;
        fs::write(path.join("leaf"), b"x")?;
        let expected = format!("{}leaf", "d/".repeat(300));
        assert_eq!(walk(&root)?, [expected]);
        Ok(())
    }

    #[test]
    fn empty_tree_has_no_files() -> TestResult {
        let (_dir, root) = tree(&[])?;
        assert_eq!(walk(&root)?, Vec::<String>::new());
        Ok(())
    }

    #[test]
    fn missing_root_and_file_root_are_errors_naming_the_root() -> TestResult {
        let (dir, root) = tree(&["f"])?;
        let missing = format!("{root}/nope");
        assert_eq!(
            walk(&missing).err(),
            Some(CoreError::RootMissing {
                path: missing.clone()
            })
        );
        let file = dir.path().join("f").to_string_lossy().into_owned();
        assert_eq!(
            walk(&file).err(),
            Some(CoreError::RootNotDirectory { path: file })
        );
        Ok(())
    }

    #[test]
    fn non_utf8_names_are_errors_and_the_smallest_is_reported() -> TestResult {
        let (dir, root) = tree(&["ok.txt"])?;
        let bad = |prefix: &[u8]| -> PathBuf {
            let mut name = prefix.to_vec();
            name.extend_from_slice(b"\xff\xfe.txt");
            dir.path().join(OsString::from_vec(name))
        };
        fs::write(bad(b"b"), b"x")?;
        fs::create_dir(bad(b"a"))?;
        fs::write(bad(b"a").join("inner"), b"x")?;
        assert_eq!(
            walk(&root).err(),
            Some(CoreError::NotUtf8Name {
                path: "a\u{fffd}\u{fffd}.txt".to_owned()
            })
        );
        Ok(())
    }

    #[test]
    fn directory_errors_are_classified() {
        let e = io::Error::from_raw_os_error;
        let p = || "d".to_owned();
        assert_eq!(
            dir_error(p(), &e(libc::ENOENT)),
            CoreError::Vanished { path: p() }
        );
        assert_eq!(
            dir_error(p(), &e(libc::ENOTDIR)),
            CoreError::Vanished { path: p() }
        );
        assert_eq!(
            dir_error(p(), &e(libc::EACCES)),
            CoreError::PermissionDenied { path: p() }
        );
        assert_eq!(
            dir_error(p(), &e(libc::EIO)),
            CoreError::DirUnreadable {
                path: p(),
                errno: Some(libc::EIO)
            }
        );
    }
}
