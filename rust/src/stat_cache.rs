//! `hash_files_cached`: digests of files under a root, skipping files whose stat
//! data a cache already vouches for.
//!
//! The cache file format is shared with `oracle_gate._fallback`, so either backend
//! reads the other's cache (documented in `python/oracle_gate/_native.pyi`):
//!
//! ```text
//! body = "oracle-gate stat cache 1" NUL written_ns NUL root NUL
//!        { digest SP size SP mtime_ns SP ctime_ns SP dev SP ino SP path NUL }   sorted by path
//! file = body "#" blake3_hex(body) LF
//! ```
//!
//! `written_ns` is the modification time of the temporary file the writer created
//! *before* it looked at any file, so it comes from the same clock as file times.
//! Racy-clean rule (git's, made a little stricter): an entry is trusted only if its
//! mtime and ctime are both older than `written_ns`; anything else is re-hashed.
//! A file changed after the writer started gets a time at or after `written_ns`,
//! so a same-size edit within one timestamp tick can never hide behind the cache.
//!
//! Writers write a private temporary file and rename it over the cache, so two
//! processes at once give "last writer wins", never a torn file; a file that is
//! torn anyway (crash, disk full) fails the checksum and is ignored, never trusted.
//! The cache is only a speed-up: failing to read or write it is never an error.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::prelude::*;
use rayon::prelude::*;

use crate::error::{first_error_or_all, without_panics, CoreResult};
use crate::hash::{classify_failure, hash_open_file, on_io_pool, spread_within_files, OPEN_FLAGS};

const MAGIC: &str = "oracle-gate stat cache 1";
/// `#`, 64 hex digits and a newline.
const TRAILER_LEN: usize = 66;

// pyo3 turns this doc comment into the Python docstring; the full contract is
// in `python/oracle_gate/_native.pyi`.
/// BLAKE3 digests of files under root, in parallel with the GIL released, reusing
/// digests from a stat cache for files whose size, times and inode are unchanged.
///
/// Returns one lowercase hex digest per path, in input order. Raises
/// oracle_gate.errors.TreeError naming the smallest failing path as given.
#[pyfunction]
#[pyo3(signature = (root, paths, cache=None))]
pub fn hash_files_cached(
    py: Python<'_>,
    root: String,
    paths: Vec<String>,
    cache: Option<String>,
) -> PyResult<Vec<String>> {
    Ok(py.detach(|| hash_cached(&root, &paths, cache.as_deref().map(Path::new)))?)
}

/// The stat data that must be unchanged for a cached digest to be reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    dev: u64,
    ino: u64,
}

fn nanos(secs: i64, nanos: i64) -> i128 {
    i128::from(secs) * 1_000_000_000 + i128::from(nanos)
}

impl Stat {
    fn of(meta: &Metadata) -> Self {
        Self {
            size: meta.size(),
            mtime_ns: nanos(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: nanos(meta.ctime(), meta.ctime_nsec()),
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    /// The stat data of a regular file, or `None` for anything else.
    fn of_regular(st: &libc::stat) -> Option<Self> {
        ((st.st_mode & libc::S_IFMT) == libc::S_IFREG).then(|| Self {
            size: u64::try_from(st.st_size).unwrap_or(u64::MAX),
            mtime_ns: nanos(st.st_mtime, st.st_mtime_nsec),
            ctime_ns: nanos(st.st_ctime, st.st_ctime_nsec),
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }

    /// The racy-clean rule: only a file last touched before `written_ns` is trusted.
    fn settled_before(&self, written_ns: i128) -> bool {
        self.mtime_ns < written_ns && self.ctime_ns < written_ns
    }
}

/// A cache entry; `digest` borrows from the cache file's bytes or this run's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry<'a> {
    stat: Stat,
    digest: &'a str,
}

/// A cache file that passed its checksum; only settled entries are kept, sorted
/// by path with one entry a path (the last one in the file, as a dict would keep).
#[derive(Debug, Default, PartialEq, Eq)]
struct Cache<'a> {
    entries: Vec<(&'a str, Entry<'a>)>,
}

impl<'a> Cache<'a> {
    fn from_records(mut entries: Vec<(&'a str, Entry<'a>)>) -> Self {
        // Our writers sort; a file that is not sorted is sorted here (stably, so
        // that of equal paths the last in the file is last) rather than trusted.
        if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let mut kept: Vec<(&str, Entry<'_>)> = Vec::with_capacity(entries.len());
            for entry in entries {
                match kept.last_mut() {
                    Some(last) if last.0 == entry.0 => *last = entry,
                    _ => kept.push(entry),
                }
            }
            entries = kept;
        }
        Self { entries }
    }

    /// The entry for `path`: a binary search, done by each worker thread, which
    /// measured cheaper than building a hash map of 100,000 keys first.
    fn get(&self, path: &str) -> Option<&Entry<'a>> {
        let index = self
            .entries
            .binary_search_by(|(p, _)| (*p).cmp(path))
            .ok()?;
        self.entries.get(index).map(|(_, entry)| entry)
    }
}

/// What hashing one path found.
struct Outcome {
    digest: String,
    /// Stat data of the file (always regular), to be cached if settled.
    stat: Stat,
    from_cache: bool,
}

/// Files of one directory handled together, so each is found with one
/// single-component lookup (`fstatat`/`openat`) instead of a walk of its whole path.
const BATCH: usize = 256;

/// Digests of `paths` (relative to `root`), in input order, using and refreshing
/// the cache at `cache_path` when one is given.
pub fn hash_cached(
    root: &str,
    paths: &[String],
    cache_path: Option<&Path>,
) -> CoreResult<Vec<String>> {
    without_panics(None, || {
        // Start the writer first: its file's mtime is the cut-off for this run.
        let writer = cache_path.and_then(|p| Writer::start(p).ok());
        let data = cache_path.and_then(|p| fs::read(p).ok());
        let old = data.as_deref().and_then(|d| parse(d, root));
        let spread = spread_within_files(paths.len());
        let results: Vec<CoreResult<Outcome>> = on_io_pool(|| {
            batches(paths, rayon::current_num_threads())
                .into_par_iter()
                .flat_map_iter(|range| hash_batch(root, &paths[range], old.as_ref(), spread))
                .collect()
        });
        let outcomes = first_error_or_all(results)?;
        if let Some(writer) = writer {
            let unchanged = old.is_some() && outcomes.iter().all(|o| o.from_cache);
            if !unchanged {
                let entries = merge(root, old, paths, &outcomes, writer.written_ns);
                let content = render(root, writer.written_ns, &entries);
                // Best effort: a cache we cannot write only costs speed next time.
                let _ = writer.commit(&content);
            }
        }
        Ok(outcomes.into_iter().map(|o| o.digest).collect())
    })
}

/// Index ranges of consecutive paths with the same parent directory, at most
/// `BATCH` long and short enough to spread over `threads` (sorted input gives the
/// fewest).
fn batches(paths: &[String], threads: usize) -> Vec<std::ops::Range<usize>> {
    // Small enough that every thread gets several batches even when all files
    // share one directory (200 large files in one directory ran on one thread).
    let limit = (paths.len() / (4 * threads.max(1))).clamp(1, BATCH);
    let mut ranges = Vec::new();
    let mut start = 0;
    for i in 1..=paths.len() {
        let split = i == paths.len()
            || i - start >= limit
            || split_rel(&paths[i]).0 != split_rel(&paths[start]).0;
        if split {
            ranges.push(start..i);
            start = i;
        }
    }
    ranges
}

/// The parent directory (`""` for none) and the name of a relative path.
fn split_rel(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

/// Hashes paths that share one parent directory, in order.
fn hash_batch<'p>(
    root: &'p str,
    batch: &'p [String],
    old: Option<&'p Cache<'p>>,
    spread: bool,
) -> impl Iterator<Item = CoreResult<Outcome>> + 'p {
    let parent = batch.first().map_or("", |p| split_rel(p).0);
    // O_PATH: a handle for lookups only, which needs no read permission.
    let dir = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(Path::new(root).join(parent))
        .ok();
    batch.iter().map(move |rel| {
        without_panics(Some(rel), || {
            let name = split_rel(rel).1;
            match (&dir, CString::new(name)) {
                (Some(dir), Ok(name)) => hash_at(root, rel, dir.as_raw_fd(), &name, old, spread),
                // The slow path explains any failure to open the directory.
                _ => hash_by_path(root, rel, old, spread),
            }
        })
    })
}

/// Hashes `rel` (or takes its cache entry if the stat data still match), looking
/// `name` up relative to the directory descriptor `dir`: its parent directory, or
/// `AT_FDCWD` with the whole path.
fn hash_at(
    root: &str,
    rel: &str,
    dir: RawFd,
    name: &CString,
    old: Option<&Cache<'_>>,
    spread: bool,
) -> CoreResult<Outcome> {
    let fail = |e: io::Error| classify_failure(&Path::new(root).join(rel), rel, &e);
    if let Some(entry) = old.and_then(|c| c.get(rel)) {
        let mut st = std::mem::MaybeUninit::<libc::stat>::zeroed();
        // SAFETY: `dir` is an open descriptor or `AT_FDCWD`, `name` is NUL-terminated
        // and `st` points to writable memory of the right size for the duration of
        // the call.
        retry_interrupted(|| unsafe { libc::fstatat(dir, name.as_ptr(), st.as_mut_ptr(), 0) })
            .map_err(fail)?;
        // SAFETY: fstatat returned 0, so it filled `st`; zeroed memory is a valid
        // `libc::stat` in any case (a plain C struct of integers).
        let st = unsafe { st.assume_init() };
        if Stat::of_regular(&st) == Some(entry.stat) {
            return Ok(hit(entry));
        }
    }
    // SAFETY: as above; the returned descriptor, if any, is owned by the File below.
    let fd = retry_interrupted(|| unsafe {
        libc::openat(dir, name.as_ptr(), libc::O_RDONLY | OPEN_FLAGS)
    })
    .map_err(fail)?;
    // SAFETY: `fd` is a fresh descriptor that nothing else owns.
    let file = unsafe { File::from_raw_fd(fd) };
    hash_opened(&file, spread).map_err(fail)
}

/// Runs a libc call that returns -1 on failure again while a signal interrupts
/// it (`EINTR`), as `std::fs` and Python's `os` module do for their own calls.
fn retry_interrupted(mut call: impl FnMut() -> libc::c_int) -> io::Result<libc::c_int> {
    loop {
        let rc = call();
        if rc >= 0 {
            return Ok(rc);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

fn hit(entry: &Entry<'_>) -> Outcome {
    Outcome {
        digest: entry.digest.to_owned(),
        stat: entry.stat,
        from_cache: true,
    }
}

fn hash_opened(file: &File, spread: bool) -> io::Result<Outcome> {
    // Stat data from before the read: a change during the read moves mtime past it.
    let meta = file.metadata()?;
    let digest = hash_open_file(file, &meta, spread)?;
    Ok(Outcome {
        digest,
        stat: Stat::of(&meta),
        from_cache: false,
    })
}

/// The path-based way, used when the parent directory cannot be opened; its
/// errors are the same as `hash_files`'.
fn hash_by_path(
    root: &str,
    rel: &str,
    old: Option<&Cache<'_>>,
    spread: bool,
) -> CoreResult<Outcome> {
    let fs_path = Path::new(root).join(rel);
    match CString::new(fs_path.as_os_str().as_bytes()) {
        Ok(path) => hash_at(root, rel, libc::AT_FDCWD, &path, old, spread),
        // What `std::fs` reports for a path with a NUL byte: no errno.
        Err(_) => {
            let e = io::Error::new(
                io::ErrorKind::InvalidInput,
                "file name contained an unexpected NUL byte",
            );
            Err(classify_failure(&fs_path, rel, &e))
        }
    }
}

/// The entries to write: this run's settled results, and the old entries of
/// other files that are still regular files, so deleted files leave the cache.
fn merge<'a>(
    root: &str,
    old: Option<Cache<'a>>,
    paths: &'a [String],
    outcomes: &'a [Outcome],
    written_ns: i128,
) -> BTreeMap<&'a str, Entry<'a>> {
    let mut this_run: Vec<&str> = paths.iter().map(String::as_str).collect();
    this_run.sort_unstable();
    let others: Vec<(&str, Entry<'_>)> = old.map_or_else(Vec::new, |cache| {
        on_io_pool(|| {
            cache
                .entries
                .into_par_iter()
                .filter(|(path, _)| {
                    this_run.binary_search(path).is_err()
                        && fs::metadata(Path::new(root).join(path)).is_ok_and(|m| m.is_file())
                })
                .collect()
        })
    });
    let mut entries: BTreeMap<&str, Entry<'_>> = others.into_iter().collect();
    for (rel, outcome) in paths.iter().zip(outcomes) {
        if outcome.stat.settled_before(written_ns) {
            let digest = outcome.digest.as_str();
            entries.insert(
                rel,
                Entry {
                    stat: outcome.stat,
                    digest,
                },
            );
        }
    }
    entries
}

fn render(root: &str, written_ns: i128, entries: &BTreeMap<&str, Entry<'_>>) -> Vec<u8> {
    use std::fmt::Write as _;
    let mut body = format!("{MAGIC}\0{written_ns}\0{root}\0");
    for (path, Entry { stat, digest }) in entries {
        // Writing to a String cannot fail.
        let _ = write!(
            body,
            "{digest} {} {} {} {} {} {path}\0",
            stat.size, stat.mtime_ns, stat.ctime_ns, stat.dev, stat.ino
        );
    }
    let mut body = body.into_bytes();
    let checksum = blake3::hash(&body).to_hex();
    body.push(b'#');
    body.extend_from_slice(checksum.as_bytes());
    body.push(b'\n');
    body
}

/// The settled entries of a cache file if it is whole, well formed and written
/// for `root`; `None` otherwise, so a damaged cache is never trusted.
fn parse<'a>(data: &'a [u8], root: &str) -> Option<Cache<'a>> {
    let body_len = data.len().checked_sub(TRAILER_LEN)?;
    let (body, trailer) = data.split_at(body_len);
    let checksum = blake3::hash(body).to_hex();
    if trailer.first() != Some(&b'#')
        || trailer.last() != Some(&b'\n')
        || trailer.get(1..TRAILER_LEN - 1) != Some(checksum.as_bytes())
    {
        return None;
    }
    let body = std::str::from_utf8(body).ok()?;
    let mut records = body.strip_suffix('\0')?.split('\0');
    if records.next()? != MAGIC {
        return None;
    }
    let written_ns: i128 = parse_int(records.next()?, true)?;
    if records.next()? != root {
        return None;
    }
    let records: Vec<&str> = records.collect();
    let parsed: Option<Vec<(&str, Entry<'_>)>> =
        on_io_pool(|| records.par_iter().map(|r| parse_entry(r)).collect());
    let mut entries = parsed?;
    entries.retain(|(_, entry)| entry.stat.settled_before(written_ns));
    Some(Cache::from_records(entries))
}

/// Decimal digits, with a leading `-` only when `signed`. Stricter than `str::parse`,
/// which also takes `+`, so that both backends accept exactly the same files.
fn parse_int<T: std::str::FromStr>(text: &str, signed: bool) -> Option<T> {
    let digits = if signed {
        text.strip_prefix('-').unwrap_or(text)
    } else {
        text
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn parse_entry(record: &str) -> Option<(&str, Entry<'_>)> {
    let mut fields = record.splitn(7, ' ');
    let digest = fields.next()?;
    let is_hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
    if digest.len() != 64 || !digest.bytes().all(is_hex) {
        return None;
    }
    let stat = Stat {
        size: parse_int(fields.next()?, false)?,
        mtime_ns: parse_int(fields.next()?, true)?,
        ctime_ns: parse_int(fields.next()?, true)?,
        dev: parse_int(fields.next()?, false)?,
        ino: parse_int(fields.next()?, false)?,
    };
    let path = fields.next().filter(|p| !p.is_empty())?;
    Some((path, Entry { stat, digest }))
}

/// A private temporary file next to the cache, renamed over it on commit and
/// removed if dropped uncommitted.
struct Writer {
    temporary: PathBuf,
    target: PathBuf,
    file: File,
    written_ns: i128,
}

static TEMPORARY_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Writer {
    fn start(target: &Path) -> io::Result<Self> {
        let (dir, name) = dir_and_name(target);
        fs::create_dir_all(dir)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let count = TEMPORARY_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temporary = target.with_file_name(format!(
            ".{name}.{}.{nanos}.{count}.tmp",
            std::process::id()
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        let written_ns = match file.metadata() {
            Ok(meta) => Stat::of(&meta).mtime_ns,
            Err(e) => {
                let _ = fs::remove_file(&temporary);
                return Err(e);
            }
        };
        Ok(Self {
            temporary,
            target: target.to_owned(),
            file,
            written_ns,
        })
    }

    fn commit(mut self, content: &[u8]) -> io::Result<()> {
        // No fsync: after a crash the checksum rejects a partial file, and the cache
        // is rebuilt at the cost of one cold run.
        self.file.write_all(content)?;
        fs::rename(&self.temporary, &self.target)?;
        // Only a commit cleans up, so a run that leaves the cache as it is lists no
        // directory (it still creates, stats and removes its own temporary file).
        remove_abandoned(&self.target);
        Ok(())
    }
}

/// The directory of the cache file `target` (`.` for a bare name) and its file name.
fn dir_and_name(target: &Path) -> (&Path, String) {
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map_or_else(|| "stat-cache".into(), |n| n.to_string_lossy().into_owned());
    (dir, name)
}

/// A temporary file left by a writer that was killed before its commit is
/// removed by the next writer: if its process is gone or it is older than this
/// (the process id may have been reused).
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Removes the abandoned temporary files of the cache file `target`; both
/// backends name them `.{name}.{pid}.{unique}.tmp` next to it.
fn remove_abandoned(target: &Path) {
    let (dir, name) = dir_and_name(target);
    let prefix = format!(".{name}.");
    let Ok(listing) = fs::read_dir(dir) else {
        return;
    };
    for entry in listing.flatten() {
        let file_name = entry.file_name();
        let pid = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| parse_int::<u32>(pid, false));
        if let Some(pid) = pid {
            let age = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok()?.elapsed().ok());
            if pid != std::process::id() && (process_gone(pid) || age > Some(ABANDONED_AFTER)) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// Whether no process with this id exists (in this pid namespace).
fn process_gone(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    pid > 0 && rc != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

impl Drop for Writer {
    fn drop(&mut self) {
        // After a successful rename this finds nothing to remove.
        let _ = fs::remove_file(&self.temporary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CoreError;
    use std::error::Error;
    use tempfile::TempDir;

    type TestResult = Result<(), Box<dyn Error>>;

    /// A temporary root holding `files`, and the cache path inside it.
    fn tree(files: &[(&str, &str)]) -> Result<(TempDir, String, PathBuf), Box<dyn Error>> {
        let dir = tempfile::Builder::new().prefix("oracle-gate-").tempdir()?;
        for (name, text) in files {
            fs::write(dir.path().join(name), text)?;
        }
        // Let the file times fall into an earlier timestamp tick than the cache's.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let root = dir.path().to_string_lossy().into_owned();
        let cache = dir.path().join(".oracle_gate/stat-cache");
        Ok((dir, root, cache))
    }

    fn owned(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn hex(text: &str) -> String {
        blake3::hash(text.as_bytes()).to_hex().to_string()
    }

    #[test]
    fn interrupted_calls_are_retried_and_other_errors_returned() {
        let fail_with = |errno: i32| {
            // SAFETY: writes this thread's errno, as a failing libc call would.
            unsafe { *libc::__errno_location() = errno };
            -1
        };
        let mut calls = 0;
        let retried = retry_interrupted(|| {
            calls += 1;
            if calls < 3 {
                fail_with(libc::EINTR)
            } else {
                7
            }
        });
        assert_eq!((retried.ok(), calls), (Some(7), 3));
        let failed = retry_interrupted(|| fail_with(libc::ENOENT));
        assert_eq!(
            failed.err().and_then(|e| e.raw_os_error()),
            Some(libc::ENOENT)
        );
    }

    #[test]
    fn cold_and_warm_runs_agree_and_the_warm_run_reads_the_cache() -> TestResult {
        let (_dir, root, cache) = tree(&[("a", "alpha"), ("b", "beta")])?;
        let paths = owned(&["b", "a"]);
        let cold = hash_cached(&root, &paths, Some(&cache))?;
        assert_eq!(cold, [hex("beta"), hex("alpha")]);
        let data = fs::read(&cache)?;
        let loaded = parse(&data, &root).ok_or("cache was not written")?;
        assert_eq!(loaded.entries.len(), 2);
        assert_eq!(hash_cached(&root, &paths, Some(&cache))?, cold);
        assert_eq!(hash_cached(&root, &paths, None)?, cold);
        Ok(())
    }

    #[test]
    fn a_trusted_entry_is_used_without_reading_the_file() -> TestResult {
        let (_dir, root, cache) = tree(&[("a", "alpha")])?;
        let stat = Stat::of(&fs::metadata(Path::new(&root).join("a"))?);
        let fake = "f".repeat(64);
        let entries = BTreeMap::from([(
            "a",
            Entry {
                stat,
                digest: fake.as_str(),
            },
        )]);
        // Written after the file: trusted, so the (wrong) cached digest comes back.
        fs::create_dir_all(cache.parent().ok_or("no parent")?)?;
        fs::write(&cache, render(&root, stat.ctime_ns + 1, &entries))?;
        assert_eq!(
            hash_cached(&root, &owned(&["a"]), Some(&cache))?.as_slice(),
            std::slice::from_ref(&fake)
        );
        // Racily clean (written in the same tick as the file): re-hashed.
        fs::write(&cache, render(&root, stat.mtime_ns, &entries))?;
        assert_eq!(
            hash_cached(&root, &owned(&["a"]), Some(&cache))?,
            [hex("alpha")]
        );
        Ok(())
    }

    #[test]
    fn a_cache_for_another_root_or_with_a_bad_checksum_is_ignored() -> TestResult {
        let (_dir, root, cache) = tree(&[("a", "alpha")])?;
        let stat = Stat::of(&fs::metadata(Path::new(&root).join("a"))?);
        let fake = "f".repeat(64);
        let entries = BTreeMap::from([(
            "a",
            Entry {
                stat,
                digest: fake.as_str(),
            },
        )]);
        let good = render(&root, stat.ctime_ns + 1, &entries);
        assert!(parse(&good, &root).is_some());
        assert!(parse(&good, "/elsewhere").is_none());
        let mut flipped = good.clone();
        flipped[30] ^= 1;
        assert!(parse(&flipped, &root).is_none());
        for cut in [0, 1, good.len() / 2, good.len() - 1] {
            assert!(parse(&good[..cut], &root).is_none(), "torn at {cut}");
        }
        fs::create_dir_all(cache.parent().ok_or("no parent")?)?;
        fs::write(&cache, &good[..good.len() - 1])?;
        assert_eq!(
            hash_cached(&root, &owned(&["a"]), Some(&cache))?,
            [hex("alpha")]
        );
        Ok(())
    }

    #[test]
    fn a_changed_file_is_rehashed() -> TestResult {
        let (dir, root, cache) = tree(&[("a", "alpha")])?;
        hash_cached(&root, &owned(&["a"]), Some(&cache))?;
        fs::write(dir.path().join("a"), "ALPHA")?;
        assert_eq!(
            hash_cached(&root, &owned(&["a"]), Some(&cache))?,
            [hex("ALPHA")]
        );
        Ok(())
    }

    #[test]
    fn entries_of_other_calls_are_kept() -> TestResult {
        let (_dir, root, cache) = tree(&[("a", "alpha"), ("b", "beta")])?;
        hash_cached(&root, &owned(&["a"]), Some(&cache))?;
        hash_cached(&root, &owned(&["b"]), Some(&cache))?;
        let data = fs::read(&cache)?;
        let loaded = parse(&data, &root).ok_or("cache was not written")?;
        let mut names: Vec<_> = loaded.entries.iter().map(|(p, _)| *p).collect();
        names.sort();
        assert_eq!(names, ["a", "b"]);
        Ok(())
    }

    #[test]
    fn errors_name_the_relative_path_and_leave_no_temporary_file() -> TestResult {
        let (dir, root, cache) = tree(&[("a", "alpha")])?;
        let err = hash_cached(&root, &owned(&["a", "missing"]), Some(&cache)).err();
        assert_eq!(
            err,
            Some(CoreError::NotFound {
                path: "missing".to_owned()
            })
        );
        let leftovers: Vec<_> =
            fs::read_dir(dir.path().join(".oracle_gate"))?.collect::<Result<Vec<_>, _>>()?;
        assert!(leftovers.is_empty(), "{leftovers:?}");
        Ok(())
    }

    #[test]
    fn an_unwritable_cache_location_is_not_an_error() -> TestResult {
        let (dir, root, _cache) = tree(&[("a", "alpha"), ("blocker", "")])?;
        let cache = dir.path().join("blocker/stat-cache");
        assert_eq!(
            hash_cached(&root, &owned(&["a"]), Some(&cache))?,
            [hex("alpha")]
        );
        Ok(())
    }

    #[test]
    fn batches_split_at_directory_changes_and_at_the_batch_size() {
        let mut paths = owned(&["a", "b", "d/x", "d/y", "d/e/z", "c"]);
        assert_eq!(batches(&paths, 1), [0..1, 1..2, 2..3, 3..4, 4..5, 5..6]);
        paths.extend((0..18).map(|i| format!("e/{i}")));
        assert_eq!(batches(&paths, 1)[..4], [0..2, 2..4, 4..5, 5..6]);
        paths = (0..BATCH * 8 + 3).map(|i| format!("d/{i}")).collect();
        let many = batches(&paths, 1);
        assert_eq!(many.len(), 9);
        assert_eq!(
            (many[0].clone(), many[8].clone()),
            (0..BATCH, BATCH * 8..BATCH * 8 + 3)
        );
        // 200 files of one directory still spread over 8 threads.
        paths.truncate(200);
        assert_eq!(batches(&paths, 8).len(), 34);
        assert!(batches(&[], 8).is_empty());
    }

    #[test]
    fn a_missing_parent_directory_takes_the_slow_path_with_the_same_errors() -> TestResult {
        let (dir, root, cache) = tree(&[("a", "alpha")])?;
        fs::create_dir(dir.path().join("sub"))?;
        fs::write(dir.path().join("sub/f"), "f")?;
        let cases = [
            (
                "gone/f",
                CoreError::NotFound {
                    path: "gone/f".to_owned(),
                },
            ),
            (
                "a/f",
                CoreError::Unreadable {
                    path: "a/f".to_owned(),
                    errno: Some(libc::ENOTDIR),
                },
            ),
            (
                "sub",
                CoreError::IsDirectory {
                    path: "sub".to_owned(),
                },
            ),
        ];
        for (rel, expected) in cases {
            let paths = owned(&[rel]);
            let message = expected.to_string();
            assert_eq!(
                hash_cached(&root, &paths, Some(&cache)).err(),
                Some(expected)
            );
            assert_eq!(
                crate::hash::hash_all(&[format!("{root}/{rel}")])
                    .err()
                    .map(|e| e.to_string()),
                Some(message)
            );
        }
        Ok(())
    }

    #[test]
    fn the_path_based_way_hashes_takes_cache_hits_and_refuses_nul_bytes() -> TestResult {
        let (_dir, root, _cache) = tree(&[("a", "alpha")])?;
        let cold = hash_by_path(&root, "a", None, false)?;
        assert_eq!(
            (cold.digest.as_str(), cold.from_cache),
            (hex("alpha").as_str(), false)
        );
        let cache = Cache::from_records(vec![(
            "a",
            Entry {
                stat: cold.stat,
                digest: "cached",
            },
        )]);
        let warm = hash_by_path(&root, "a", Some(&cache), false)?;
        assert_eq!((warm.digest.as_str(), warm.from_cache), ("cached", true));
        let expected = CoreError::Unreadable {
            path: "n\0ul".to_owned(),
            errno: None,
        };
        assert_eq!(
            hash_by_path(&root, "n\0ul", None, false).err(),
            Some(expected)
        );
        assert_eq!(
            crate::hash::hash_all(&[format!("{root}/n\0ul")]).err(),
            Some(CoreError::Unreadable {
                path: format!("{root}/n\0ul"),
                errno: None
            })
        );
        Ok(())
    }

    #[test]
    fn an_unsorted_cache_is_sorted_and_the_last_duplicate_wins() {
        let stat = Stat {
            size: 1,
            mtime_ns: 1,
            ctime_ns: 1,
            dev: 1,
            ino: 1,
        };
        let at = |digest| Entry { stat, digest };
        let cache = Cache::from_records(vec![("b", at("1")), ("a", at("2")), ("b", at("3"))]);
        assert_eq!(cache.get("a").map(|e| e.digest), Some("2"));
        assert_eq!(cache.get("b").map(|e| e.digest), Some("3"));
        assert_eq!(cache.get("c"), None);
        assert_eq!(cache.entries.len(), 2);
    }

    #[test]
    fn entry_parsing_rejects_malformed_records() {
        let ok = format!("{} 1 -2 3 4 5 a b", "0".repeat(64));
        assert_eq!(parse_entry(&ok).map(|(p, _)| p), Some("a b"));
        for bad in [
            format!("{} 1 2 3 4 5 ", "0".repeat(64)),
            format!("{} 1 2 3 4 5 p", "A".repeat(64)),
            format!("{} x 2 3 4 5 p", "0".repeat(64)),
            "short 1 2 3 4 5 p".to_owned(),
            format!("{} +1 2 3 4 5 p", "0".repeat(64)),
            format!("{} -1 2 3 4 5 p", "0".repeat(64)),
            format!("{} 1 2 3 4 18446744073709551616 p", "0".repeat(64)),
        ] {
            assert!(parse_entry(&bad).is_none(), "{bad}");
        }
    }
}
