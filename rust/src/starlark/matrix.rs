//! A gate's matrix built in the native core, for a gate whose call is plainly right.
//!
//! `python/oracle_gate/config/matrix.py` (`gate_matrix`) turns a gate call into a
//! matrix and checks it against the schema, with the messages users see. Checking
//! 8,000 gates that way is a large part of a cold `select` on a monorepo, and nearly
//! every gate is right. This module accepts a strict subset of what `gate_matrix`
//! accepts and builds the same values; anything else (any mistake, any value it is
//! not sure of) gives `None` and the caller runs `gate_matrix`. So every message
//! still comes from Python, and a test compares both readers on good and bad gates.

use std::collections::HashSet;
use std::ops::Deref;

use super::gate::{GateCall, GateValue, Gates};
use super::tables::{BUDGET_KEYS, DEFAULT_EXAMPLES, DEFAULT_SECONDS, GATE_FILES, ROW_KEYS};

/// A row of the matrix, as `oracle_gate.model.Row` holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixRow {
    pub id: String,
    pub globs: Vec<String>,
    pub properties: Vec<String>,
    pub partitions: Vec<String>,
    pub relations: Vec<String>,
    pub fixtures: Vec<String>,
    pub examples: i64,
    pub seconds: f64,
}

/// The matrix a gate declares and the gate's name, as `gate_matrix` returns them.
#[derive(Debug, Clone, PartialEq)]
pub struct GateMatrix {
    pub name: String,
    pub owners: Vec<String>,
    pub tests: Vec<String>,
    pub fixtures: Vec<String>,
    /// Repository-relative `//dir:name` labels.
    pub deps: Vec<String>,
    pub rows: Vec<MatrixRow>,
}

/// Integers above this are not all exactly floats; leave them to Python's `float()`.
const EXACT_FLOAT: i64 = 1 << 53;

// The schema's character sets (`config/schema.py`); its names are in `tables.rs`.
fn is_id_first(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_id_char(c: char) -> bool {
    is_id_first(c) || "_.-".contains(c)
}

fn is_name_first(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    is_name_first(c) || c.is_ascii_digit()
}

fn is_module_char(c: char) -> bool {
    is_id_first(c) || "_./-".contains(c)
}

/// Non-empty, its first character `first`, the others `rest` (`schema._only`).
fn only(text: &str, first: fn(char) -> bool, rest: fn(char) -> bool) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(first) && chars.all(rest)
}

/// `globs.validate_glob(pattern) is None`.
fn valid_glob(pattern: &str) -> bool {
    !pattern.is_empty()
        && !pattern.starts_with('/')
        && pattern
            .trim_end_matches('/')
            .split('/')
            .all(|s| !matches!(s, "" | "." | "..") && (s == "**" || !s.contains("**")))
}

/// `schema.path_problem(entry) is None`: a package-relative path or pattern.
fn valid_path(entry: &str) -> bool {
    !entry.starts_with([':', '@']) && valid_glob(entry)
}

/// `schema.ref_module(entry) is not None`: a well-formed `file.py:NAME`.
fn valid_ref(entry: &str) -> bool {
    let Some((module, name)) = entry.split_once(':') else {
        return false;
    };
    !name.contains(':')
        && module.ends_with(".py")
        && only(module, is_module_char, is_module_char)
        && valid_path(module)
        && only(name, is_name_first, is_name_char)
}

/// Whether a `*`/`?` pattern segment matches a whole path segment (`globs.wildcard_match`):
/// on a mismatch only the last `*` takes one more character, so each character of
/// `text` is looked at once per `*` before it at most, never once per way to split it.
fn segment_matches(pattern: &[char], text: &[char]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None; // the last `*` and where it stopped
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(c) if *c == '?' || *c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((at, stopped)) => {
                    star = Some((at, stopped + 1));
                    p = at + 1;
                    t = stopped + 1;
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// Whether a pattern segment other than `**` matches a path segment. As in Bazel, a
/// name starting with `.` is matched only by `*` or a segment starting with `.`
/// (`*.dep` leaves out `.a.dep`): `globs.compile_glob(pattern, bazel=True)`.
fn segment_allows(segment: &str, name: &str) -> bool {
    if name.starts_with('.') && segment != "*" && !segment.starts_with('.') {
        return false;
    }
    let pattern: Vec<char> = segment.chars().collect();
    let text: Vec<char> = name.chars().collect();
    segment_matches(&pattern, &text)
}

/// Whether pattern segments match path segments (`globs.compile_glob`, fullmatch), by
/// dynamic programming over the pattern's segments (`GlobPattern.segments_match`):
/// `matched[j]`, whether what follows can match `path[j..]`.
fn segments_match(pattern: &[&str], path: &[&str]) -> bool {
    let count = path.len();
    let mut matched: Vec<bool> = (0..=count).map(|j| j == count).collect();
    for (index, segment) in pattern.iter().enumerate().rev() {
        let last = index == pattern.len() - 1;
        let mut reach = vec![false; count + 1];
        if *segment == "**" {
            // Whole segments, none empty: one or more when last, else zero or more.
            reach[count] = matched[count] && !last;
            for j in (0..count).rev() {
                reach[j] = if last {
                    !path[j].is_empty() && (j == count - 1 || reach[j + 1])
                } else {
                    matched[j] || (!path[j].is_empty() && reach[j + 1])
                };
            }
        } else {
            for j in 0..count {
                reach[j] = segment_allows(segment, path[j]) && matched[j + 1];
            }
        }
        matched = reach;
    }
    matched[0]
}

/// Whether `pattern` could match a path below the directory `path` (both split at
/// `/`): it matches `path`'s segments and has segments left for what lies below.
fn segments_reach(pattern: &[&str], path: &[&str]) -> bool {
    match (pattern.split_first(), path.split_first()) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some((&"**", _)), Some(_)) => true,
        (Some((segment, rest)), Some((first, others))) => {
            segment_allows(segment, first) && segments_reach(rest, others)
        }
    }
}

/// Whether `pattern` matches the package-relative `path` itself or could match a path
/// below it, were it a directory: what a glob may find through a symbolic link.
pub(super) fn glob_touches(pattern: &str, path: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    segments_match(&pattern, &path) || segments_reach(&pattern, &path)
}

/// Whether `pattern` (valid, not ending in `/`) matches the package-relative `path`.
fn glob_matches(pattern: &str, path: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    segments_match(&pattern, &path)
}

/// `bazel/glob.evaluate_glob` over files only, or None when it would raise or
/// also match directories.
pub(super) fn expand_glob(
    include: &[String],
    exclude: &[String],
    exclude_directories: bool,
    owned: &[&str],
) -> Option<Vec<String>> {
    let patterns = include.iter().chain(exclude);
    if !exclude_directories || !patterns.clone().all(|p| !p.ends_with('/') && valid_glob(p)) {
        return None;
    }
    let mut found: Vec<String> = owned
        .iter()
        .filter(|path| {
            include.iter().any(|p| glob_matches(p, path))
                && !exclude.iter().any(|p| glob_matches(p, path))
        })
        .map(|path| (*path).to_owned())
        .collect();
    found.sort();
    Some(found)
}

/// The value of keyword `key`; `None` twice over (missing, or `None` written) is `Ok(None)`.
fn keyword<'a>(call: &'a GateCall, key: &str) -> Option<&'a GateValue> {
    call.kwargs
        .iter()
        .find(|(name, _, _)| name == key)
        .map(|(_, value, _)| value)
        .filter(|value| **value != GateValue::None)
}

fn distinct<'a>(mut keys: impl Iterator<Item = &'a str>) -> bool {
    let mut seen = HashSet::new();
    keys.all(|key| seen.insert(key))
}

/// A list of strings; a missing list is empty.
fn strings(value: Option<&GateValue>) -> Option<Vec<String>> {
    match value {
        None => Some(Vec::new()),
        Some(GateValue::List(items)) => items
            .iter()
            .map(|item| match item {
                GateValue::Str(text) => Some(text.clone()),
                _ => None,
            })
            .collect(),
        Some(_) => None,
    }
}

/// A list of valid paths or patterns, `glob()` calls in it expanded when `owned` is given.
fn paths(value: Option<&GateValue>, owned: Option<&[&str]>) -> Option<Vec<String>> {
    let items = match value {
        None => return Some(Vec::new()),
        Some(GateValue::List(items)) => items,
        Some(_) => return None,
    };
    let mut found = Vec::new();
    for item in items {
        match (item, owned) {
            (GateValue::Str(text), _) => found.push(text.clone()),
            (
                GateValue::Glob {
                    include,
                    exclude,
                    exclude_directories,
                    ..
                },
                Some(owned),
            ) => found.extend(expand_glob(include, exclude, *exclude_directories, owned)?),
            _ => return None,
        }
    }
    found.iter().all(|path| valid_path(path)).then_some(found)
}

fn budget(value: Option<&GateValue>) -> Option<(i64, f64)> {
    let entries = match value {
        None => return Some((DEFAULT_EXAMPLES, DEFAULT_SECONDS)),
        Some(GateValue::Dict(entries)) => entries,
        Some(_) => return None,
    };
    if !distinct(entries.iter().map(|(key, _)| key.as_str()))
        || !entries
            .iter()
            .all(|(key, _)| BUDGET_KEYS.contains(&key.as_str()))
    {
        return None;
    }
    let number = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let examples = match number("examples") {
        None => DEFAULT_EXAMPLES,
        Some(GateValue::Int(n)) if *n >= 1 => *n,
        Some(_) => return None,
    };
    let seconds = match number("seconds") {
        None => DEFAULT_SECONDS,
        Some(GateValue::Int(n)) if *n > 0 && *n <= EXACT_FLOAT => *n as f64,
        Some(_) => return None,
    };
    Some((examples, seconds))
}

fn row(
    value: &GateValue,
    invariant_names: &[String],
    seen: &mut HashSet<String>,
) -> Option<MatrixRow> {
    let GateValue::Call(call) = value else {
        return None;
    };
    let keys = || call.kwargs.iter().map(|(key, _, _)| key.as_str());
    if !invariant_names.contains(&call.function)
        || !distinct(keys())
        || !keys().all(|key| ROW_KEYS.contains(&key))
    {
        return None;
    }
    let id = match keyword(call, "id") {
        Some(GateValue::Str(id)) if only(id, is_id_first, is_id_char) => id.clone(),
        _ => return None,
    };
    if !seen.insert(id.clone()) {
        return None;
    }
    let globs = paths(keyword(call, "globs"), None)?;
    let refs =
        |kind: &str| strings(keyword(call, kind)).filter(|refs| refs.iter().all(|r| valid_ref(r)));
    let (examples, seconds) = budget(keyword(call, "budget"))?;
    Some(MatrixRow {
        properties: refs("properties")?,
        partitions: refs("partitions")?,
        relations: refs("relations")?,
        fixtures: paths(keyword(call, "fixtures"), None)?,
        globs: (!globs.is_empty()).then_some(globs)?,
        id,
        examples,
        seconds,
    })
}

/// A safe package name: segments of `[A-Za-z0-9_.+-]`, none empty, `.` or `..`.
fn plain_package(package: &str) -> bool {
    package.is_empty() || package.split('/').all(plain_target)
}

/// A safe target name of one segment.
fn plain_target(name: &str) -> bool {
    !matches!(name, "" | "." | "..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.+-".contains(c))
}

/// A deps entry (`//pkg:name`, `//pkg`, `:name`) as a repository-relative `//dir:name`.
fn dep(text: &str, package: &str, workspace: &str) -> Option<String> {
    let (pkg, name) = if let Some(rest) = text.strip_prefix("//") {
        match rest.split_once(':') {
            Some((pkg, name)) => (pkg, name),
            None => (rest, rest.rsplit('/').next()?),
        }
    } else {
        (package, text.strip_prefix(':')?)
    };
    if !plain_package(pkg) || !plain_target(name) {
        return None;
    }
    let directory = if workspace.is_empty() {
        pkg.to_owned()
    } else {
        format!("{workspace}/{pkg}")
    };
    Some(format!("//{directory}:{name}"))
}

/// The matrix of the file's one gate, or None: no gate, several, or anything `gate_matrix`
/// could reject or read otherwise.
///
/// `package` is the Bazel package relative to `workspace`; `owned` its files,
/// package-relative and sorted, as `glob()` sees them.
pub fn gate_matrix(
    gates: &Gates,
    package: &str,
    workspace: &str,
    owned: &[&str],
) -> Option<GateMatrix> {
    let [call] = gates.calls.as_slice() else {
        return None;
    };
    if !distinct(call.kwargs.iter().map(|(key, _, _)| key.as_str())) {
        return None;
    }
    let name = match keyword(call, "name") {
        Some(GateValue::Str(name)) if !name.is_empty() => name.clone(),
        _ => return None,
    };
    let owners = strings(keyword(call, "owners"))?;
    let tests = paths(keyword(call, "tests"), Some(owned))?;
    let fixtures = paths(keyword(call, "fixtures"), Some(owned))?;
    let mut seen = HashSet::new();
    let rows = match keyword(call, "rows") {
        None => Vec::new(),
        Some(GateValue::List(items)) => items
            .iter()
            .map(|item| row(item, &gates.invariant_names, &mut seen))
            .collect::<Option<Vec<_>>>()?,
        Some(_) => return None,
    };
    // Each the package's own file, and a ledger one that exists (a lock may be written later).
    let own_file = |key: &str, default: &str| match keyword(call, key) {
        None => true,
        Some(GateValue::Str(given)) => {
            given == default && (key == "lock" || owned.contains(&default))
        }
        Some(_) => false,
    };
    if !GATE_FILES
        .iter()
        .all(|(key, default)| own_file(key, default))
    {
        return None;
    }
    let deps = strings(keyword(call, "deps"))?
        .iter()
        .map(|text| dep(text, package, workspace))
        .collect::<Option<Vec<_>>>()?;
    Some(GateMatrix {
        name,
        owners,
        tests,
        fixtures,
        deps,
        rows,
    })
}

/// The files of the Bazel package in `directory` (repository-relative), relative to it,
/// as `bazel/glob.package_files` gives them: `files` is the tree's sorted file list, and
/// a directory in `build_dirs` below `directory` is another package.
pub fn package_files<'a, S: Deref<Target = str>>(
    files: &'a [S],
    directory: &str,
    build_dirs: &HashSet<&str>,
) -> Vec<&'a str> {
    let prefix = if directory.is_empty() {
        String::new()
    } else {
        format!("{directory}/")
    };
    let start = files.partition_point(|path| &**path < prefix.as_str());
    files[start..]
        .iter()
        .take_while(|path| path.starts_with(&prefix))
        .filter(|path| {
            // Each directory between the package and the file is a prefix of the path.
            let inner = &path[prefix.len()..];
            !inner
                .match_indices('/')
                .any(|(end, _)| build_dirs.contains(&path[..prefix.len() + end]))
        })
        .map(|path| &path[prefix.len()..])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_bazel_globs_do() {
        for (pattern, path, expected) in [
            ("src/*.py", "src/a.py", true),
            ("src/*.py", "src/x/a.py", false),
            ("*.py", "a.py", true),
            ("?.py", "ab.py", false),
            ("a?.py", "ab.py", true),
            ("testdata/**", "testdata/case.json", true),
            ("testdata/**", "testdata/x/y.json", true),
            ("testdata/**", "testdata", false),
            ("**/t_*.py", "t_a.py", true),
            ("**/t_*.py", "x/y/t_a.py", true),
            ("a/**/b", "a/b", true),
            ("a/**/b", "a/x/y/b", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("é?", "éü", true),
            // Bazel's rule for hidden names, checked against Bazel 4.2.3's glob().
            ("*", ".h", true),
            ("*h", ".h", false),
            (".*", ".h", true),
            ("**", ".d/y", true),
            ("**/*", "sub/.s", true),
            ("**/.s", "sub/.s", true),
            ("**/*s", "sub/.s", false),
            ("*/y", ".d/y", true),
            ("?h", ".h", false),
        ] {
            assert_eq!(glob_matches(pattern, path), expected, "{pattern} {path}");
        }
    }

    #[test]
    fn a_glob_touches_a_link_it_matches_or_could_enter() {
        for (pattern, link, expected) in [
            ("link*", "linkdir", true),
            ("linkdir/*", "linkdir", true),
            ("**/*.txt", "d/linkdir", true),
            ("*/x.txt", "d/linkdir", false),
            ("*.txt", "linkdir", false),
            ("other/*", "linkdir", false),
            ("*/*", ".hidden", true),
            ("*n/*", ".hidden", false),
        ] {
            assert_eq!(glob_touches(pattern, link), expected, "{pattern} {link}");
        }
    }

    #[test]
    fn package_files_leave_out_subpackages() {
        let files: Vec<String> = [
            "a/BUILD",
            "a/b/BUILD",
            "a/b/x.py",
            "a/c/d/e/w.py",
            "a/c/y.py",
            "a0/z.py",
            "b.py",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let dirs: HashSet<&str> = ["a", "a/b", "a/c/d"].into_iter().collect();
        assert_eq!(package_files(&files, "a", &dirs), ["BUILD", "c/y.py"]);
        assert_eq!(package_files(&files, "", &dirs), ["a0/z.py", "b.py"]);
    }

    #[test]
    fn deps_resolve_against_the_package_and_workspace() {
        assert_eq!(dep("//a/b:c", "p", "").as_deref(), Some("//a/b:c"));
        assert_eq!(dep("//a/b", "p", "").as_deref(), Some("//a/b:b"));
        assert_eq!(dep(":c", "p", "ws").as_deref(), Some("//ws/p:c"));
        assert_eq!(dep("@r//a:b", "p", ""), None);
        assert_eq!(dep("//a/../b:c", "p", ""), None);
        assert_eq!(dep("//a:", "p", ""), None);
        assert_eq!(dep("c", "p", ""), None);
    }
}
