//! The edges a BUILD file's records make: which packages each recorded label names,
//! and the declaration `select --explain` shows for it.
//!
//! `label_ref` is `bazel/labels.py`'s `label_ref`, character for character
//! (`tests/unit/bazel/test_labels.py` holds the two to the same answers); the edges and their
//! `why` are what `graph/` made of the records before it moved here, so the graph
//! and its explanations are the same whichever side computes them.

use std::collections::HashMap;

use super::values::Record;

/// The package(s) a string written as an absolute label can name.
#[derive(Debug, PartialEq, Eq)]
pub struct LabelRef {
    /// "" for the main repository (`//`, `@//`, `@@//`).
    pub repo: String,
    pub package: String,
    /// A computed label's literal part (`"//libs/%s" % n`): every package under `package`.
    pub prefix: bool,
}

/// One edge of a BUILD file's package: to `target`, or, for a computed label, to every
/// package under `target` (`graph/edges.py` expands it: it knows every package of the tree).
#[derive(Debug, PartialEq, Eq)]
pub struct Edge {
    /// The repository-relative directory named; for a computed label, the package
    /// prefix, relative to `root`.
    pub target: String,
    pub why: String,
    pub prefix: bool,
    /// The root of the repository the label names ("" for the main one).
    pub root: String,
}

/// The repositories of the tree, as labels name them.
#[derive(Debug, Default)]
pub struct Repositories {
    /// Each workspace root's own names (`workspace(name = ...)`).
    pub own: HashMap<String, Vec<String>>,
    /// The names the main repository gives the tree's other repositories
    /// (`local_repository(name, path)`), and its own names, with their roots.
    pub named: HashMap<String, String>,
    /// Why a repository name not in `named` may still lie in the tree ("" when the root
    /// WORKSPACE declares every repository of the tree plainly).
    pub unknown: String,
}

impl Repositories {
    /// The root of the repository a label of `workspace` names, or None: one not in the
    /// tree. `repo` is the name written after `@` ("" in `@//`: the main repository),
    /// None for a label without one (`workspace`'s own).
    pub fn root_of<'a>(&'a self, repo: Option<&str>, workspace: &'a str) -> Option<&'a str> {
        let own = self.own.get(workspace);
        match repo {
            None => Some(workspace),
            Some(name) if own.is_some_and(|names| names.iter().any(|n| n == name)) => {
                Some(workspace)
            }
            Some("") => Some(""),
            Some(name) => self.named.get(name).map(String::as_str),
        }
    }
}

/// What one BUILD file's records give the graph.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Edges {
    pub edges: Vec<Edge>,
    /// Why the graph over-approximates in this file (`select` reports each once).
    pub approximate: Vec<String>,
}

/// Python's `\s` in a `str` pattern: Unicode white space, and the four separators
/// U+001C..U+001F that `str.isspace` counts too.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `[^:\s\\]*` as a full match.
fn is_package_name(text: &str) -> bool {
    // Bazel 4.2.3 takes "//my lib": a space, but no other white space.
    !text
        .chars()
        .any(|c| c == ':' || c == '\\' || (c != ' ' && is_python_space(c)))
}

/// `[A-Za-z0-9_.~+-]*` as a full match.
fn is_repo_name(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_.~+-".contains(&b))
}

fn has_format_marker(text: &str) -> Option<usize> {
    text.find(['%', '{'])
}

const PSEUDO_LABELS: [&str; 2] = ["//conditions:default", "@bazel_tools//conditions:default"];

/// What an absolute label, complete or a computed label's literal part, can name;
/// None for strings that are no absolute label.
pub fn label_ref(text: &str) -> Option<LabelRef> {
    if !(text.starts_with("//") || text.starts_with('@')) || PSEUDO_LABELS.contains(&text) {
        return None;
    }
    let Some((repo, rest)) = text.trim_start_matches('@').split_once("//") else {
        // "@zlib" is "@zlib//:zlib": the root package of that repository.
        let repo = text.trim_start_matches('@');
        return (!repo.is_empty() && is_repo_name(repo)).then(|| LabelRef {
            repo: repo.to_owned(),
            package: String::new(),
            prefix: false,
        });
    };
    if !is_repo_name(repo) {
        return None;
    }
    let (package, name) = match rest.split_once(':') {
        Some((package, name)) => (package, Some(name)),
        None => (rest, None),
    };
    let reference = |package: &str, prefix: bool| {
        is_package_name(package).then(|| LabelRef {
            repo: repo.to_owned(),
            package: package.to_owned(),
            prefix,
        })
    };
    if let Some(marker) = has_format_marker(package) {
        return reference(&package[..marker], true);
    }
    match name {
        None if package.is_empty() || package.ends_with('/') => reference(package, true),
        Some(name) if name.is_empty() || has_format_marker(name).is_some() => {
            reference(package, false)
        }
        _ => main_repo_package(rest).map(|package| LabelRef {
            repo: repo.to_owned(),
            package,
            prefix: false,
        }),
    }
}

/// The package `//{rest}` names, when it parses as a label (`labels.py`'s `parse_label`).
fn main_repo_package(rest: &str) -> Option<String> {
    let (package, name) = match rest.split_once(':') {
        Some((package, name)) => (package, name),
        None if rest.is_empty() => return None,
        None => (rest, rest.rsplit('/').next().unwrap_or(rest)),
    };
    let valid_package = is_package_name(package)
        && (package.is_empty()
            || !(package.starts_with('/')
                || package.ends_with('/')
                || package
                    .split('/')
                    .any(|part| matches!(part, "" | "." | ".."))));
    let valid_name = !name.is_empty()
        && !name.contains(':')
        && !name.starts_with('/')
        && !name.contains("//")
        && !name.ends_with('/')
        && !name.split('/').any(|part| matches!(part, "." | ".."));
    (valid_package && valid_name).then(|| package.to_owned())
}

/// This project's own rules, loaded from `@oracle_gate`: a gate's labels are its deps.
const OWN_RULES: [&str; 2] = ["%oracle_gate", "%invariant"];

/// The edges of the BUILD file at `path` (package directory `directory`, in the
/// workspace rooted at `workspace`, which calls itself `own_names`).
pub fn edges(
    records: &[Record],
    path: &str,
    directory: &str,
    workspace: &str,
    repositories: &Repositories,
) -> Edges {
    let own_line = format!("{path}:");
    let mut found = Edges::default();
    for record in records {
        let Some(reference) = label_ref(&record.label) else {
            continue;
        };
        let written = record
            .label
            .starts_with('@')
            .then_some(reference.repo.as_str());
        let Some(root) = repositories.root_of(written, workspace) else {
            if !repositories.unknown.is_empty() {
                let why = format!(
                    "{} names {}, a repository {} may declare: every package",
                    record.location, record.label, repositories.unknown
                );
                found.approximate.push(why.clone());
                found.edges.push(Edge {
                    target: String::new(),
                    why,
                    prefix: true,
                    root: String::new(),
                });
            }
            continue; // else a repository not in the tree
        };
        let through = if record.location.starts_with(&own_line) {
            String::new()
        } else {
            format!(", through {path},")
        };
        let mut why = format!("{}{through} names {}", record.location, record.label);
        let opaque = &record.opaque;
        if !opaque.is_empty() && !OWN_RULES.iter().any(|rule| opaque.ends_with(rule)) {
            why = format!("over-approximation: {why} in a call to {opaque}");
            found.approximate.push(format!(
                "{path} calls {opaque}, from a repository not in the tree: \
                 every label it is given is taken as a dependency"
            ));
        }
        if reference.prefix {
            why = format!(
                "{why}, a computed label: every package under //{}",
                reference.package
            );
            found.approximate.push(why.clone());
        }
        let target = match (
            reference.prefix,
            root.is_empty(),
            reference.package.is_empty(),
        ) {
            // A repository outside the tree (`@name`) is one node, whatever its package.
            (false, _, _) if root.starts_with('@') => root.to_owned(),
            (true, _, _) | (false, true, false) => reference.package,
            (false, _, true) => root.to_owned(),
            (false, false, false) => format!("{root}/{}", reference.package),
        };
        if reference.prefix || target != directory {
            found.edges.push(Edge {
                target,
                why,
                prefix: reference.prefix,
                root: root.to_owned(),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(text: &str) -> Option<(String, String, bool)> {
        label_ref(text).map(|r| (r.repo, r.package, r.prefix))
    }

    fn some(repo: &str, package: &str, prefix: bool) -> Option<(String, String, bool)> {
        Some((repo.to_owned(), package.to_owned(), prefix))
    }

    #[test]
    fn labels_as_the_python_reader_reads_them() {
        assert_eq!(reference("//a/b:c"), some("", "a/b", false));
        assert_eq!(reference("//a/b"), some("", "a/b", false));
        assert_eq!(reference("@//a"), some("", "a", false));
        assert_eq!(reference("@@//a:x"), some("", "a", false));
        assert_eq!(reference("@mono//a"), some("mono", "a", false));
        assert_eq!(reference("//libs/%s"), some("", "libs/", true));
        assert_eq!(reference("//libs/"), some("", "libs/", true));
        assert_eq!(reference("//"), some("", "", true));
        assert_eq!(reference("//lib:"), some("", "lib", false));
        assert_eq!(reference("//lib:{}"), some("", "lib", false));
        assert_eq!(reference("//conditions:default"), None);
        assert_eq!(reference(":local"), None);
        assert_eq!(reference("//a/../b"), None);
        assert_eq!(reference("//a b"), some("", "a b", false));
        assert_eq!(reference("//a\tb"), None);
        assert_eq!(reference("//a\u{1f}b"), None);
        assert_eq!(reference("@bad name//a"), None);
        assert_eq!(reference("@repo"), some("repo", "", false));
        assert_eq!(reference("//a:b/../c"), None);
    }

    #[test]
    fn repository_names_lead_to_their_roots() {
        let mut repositories = Repositories::default();
        repositories
            .own
            .insert(String::new(), vec!["main".to_owned()]);
        repositories
            .own
            .insert("vendor/v".to_owned(), vec!["v".to_owned()]);
        repositories
            .named
            .insert("vendored".to_owned(), "vendor/v".to_owned());
        repositories.named.insert("main".to_owned(), String::new());
        assert_eq!(repositories.root_of(None, "vendor/v"), Some("vendor/v"));
        assert_eq!(repositories.root_of(Some(""), "vendor/v"), Some(""));
        assert_eq!(
            repositories.root_of(Some("v"), "vendor/v"),
            Some("vendor/v")
        );
        assert_eq!(repositories.root_of(Some("vendored"), ""), Some("vendor/v"));
        assert_eq!(repositories.root_of(Some("main"), "vendor/v"), Some(""));
        assert_eq!(repositories.root_of(Some("rules_go"), ""), None);
    }

    #[test]
    fn edges_name_their_declaration() {
        let record = |label: &str, location: &str, opaque: &str| Record {
            label: label.to_owned(),
            location: location.to_owned(),
            opaque: opaque.to_owned(),
        };
        let found = edges(
            &[
                record("//b:b", "a/BUILD:2", ""),
                record("//a:self", "a/BUILD:3", ""),
                record("//h", "tools/defs.bzl:4", ""),
                record("//g", "a/BUILD:5", "@rules_go//go:def.bzl%go_library"),
                record("//libs/%s", "a/BUILD:6", ""),
                record("@other//x", "a/BUILD:7", ""),
            ],
            "a/BUILD",
            "a",
            "",
            &Repositories::default(),
        );
        let whys: Vec<&str> = found.edges.iter().map(|e| e.why.as_str()).collect();
        assert_eq!(
            whys,
            [
                "a/BUILD:2 names //b:b",
                "tools/defs.bzl:4, through a/BUILD, names //h",
                "over-approximation: a/BUILD:5 names //g in a call to @rules_go//go:def.bzl%go_library",
                "a/BUILD:6 names //libs/%s, a computed label: every package under //libs/",
            ]
        );
        assert!(found.edges[3].prefix && found.edges[3].target == "libs/");
        assert_eq!(found.approximate.len(), 2);
    }

    #[test]
    fn a_repository_outside_the_tree_is_one_node() {
        let mut repositories = Repositories::default();
        repositories.own.insert(String::new(), Vec::new());
        repositories
            .named
            .insert("foo".to_owned(), "@foo".to_owned());
        let record = |label: &str| Record {
            label: label.to_owned(),
            location: "a/BUILD:1".to_owned(),
            opaque: String::new(),
        };
        let found = edges(
            &[record("@foo//:lib"), record("@foo//sub:x"), record("@foo")],
            "a/BUILD",
            "a",
            "",
            &repositories,
        );
        let targets: Vec<&str> = found.edges.iter().map(|e| e.target.as_str()).collect();
        assert_eq!(targets, ["@foo", "@foo", "@foo"]);
    }
}
