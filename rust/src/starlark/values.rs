//! The Bazel builtins a BUILD or `.bzl` file calls, as Starlark values that record labels.
//!
//! Nothing here builds anything: a rule call records the label-like strings of
//! its arguments (a dependency on another package when Python resolves them),
//! `glob()` gives the package's files as Bazel does (a BUILD file may build labels
//! from their names), `select()` keeps every branch and key, and a symbol from a
//! repository that is not in the tree is opaque: calling it records every
//! label-like string it is given, flagged as an over-approximation.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::Hash;
use std::sync::OnceLock;

use allocative::Allocative;
use starlark::any::ProvidesStaticType;
use starlark::codemap::FileSpan;
use starlark::collections::StarlarkHasher;
use starlark::environment::{Globals, GlobalsBuilder, LibraryExtension};
use starlark::eval::{Arguments, Evaluator};
use starlark::starlark_simple_value;
use starlark::values::dict::DictRef;
use starlark::values::list::ListRef;
use starlark::values::tuple::TupleRef;
use starlark::values::{
    starlark_value, FrozenValue, Heap, NoSerialize, StarlarkValue, Value, ValueLike,
};

use super::checked::{check_builtin, check_result, check_walk};
use super::guess::guessed;
use super::matrix::{expand_glob, glob_touches, package_files};
use super::tables::{ARGUMENTS_OF_NON_RULES, NOT_DEPS, NOT_RULES};

/// How the strings of argument `key` of a call of the rule or function `kind` count:
/// whether they may name dependencies, and whether they are a visibility.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Dependency,
    Visibility,
    Nothing,
}

/// `Role` of argument `key` in a call of `kind` (None: a positional argument).
pub fn argument_role(kind: &str, key: Option<&str>) -> Role {
    let visibility = matches!(key, Some("visibility" | "default_visibility"));
    if NOT_RULES.contains(&kind) {
        let counted = key.is_some_and(|key| ARGUMENTS_OF_NON_RULES.contains(&(kind, key)));
        match (counted, visibility) {
            (false, _) => Role::Nothing,
            (true, true) => Role::Visibility,
            (true, false) => Role::Dependency,
        }
    } else if visibility {
        Role::Visibility
    } else if key.is_some_and(|key| NOT_DEPS.contains(&key)) {
        Role::Nothing
    } else {
        Role::Dependency
    }
}

/// Whether a string of a visibility names a target, as a package group does: not
/// `//visibility:public` or `private`, nor a package spec (`//a:__pkg__`,
/// `//a:__subpackages__`). Bazel's query follows the ones that do.
pub fn visible_to_a_target(text: &str) -> bool {
    let name = text.rsplit_once(':').map_or("", |(_, name)| name);
    let special = text.ends_with("//visibility:public") || text.ends_with("//visibility:private");
    !special && name != "__pkg__" && name != "__subpackages__"
}

/// Adds to `out` the strings `collect` finds in an argument of `role` that may name
/// dependencies: none, all, or a visibility's package groups.
pub fn collect_in_role(role: Role, out: &mut Vec<String>, collect: impl FnOnce(&mut Vec<String>)) {
    match role {
        Role::Nothing => {}
        Role::Dependency => collect(out),
        Role::Visibility => {
            let mut found = Vec::new();
            collect(&mut found);
            out.extend(found.into_iter().filter(|text| visible_to_a_target(text)));
        }
    }
}

/// The strings of `value`, an argument of `role`, that may name dependencies.
fn strings_in_role(value: Value<'_>, role: Role, out: &mut Vec<String>) {
    collect_in_role(role, out, |out| strings_of(value, out));
}

/// One label-like string a rule call was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub label: String,
    /// `file:line` of the call that named it (a macro's line for a macro's rule).
    pub location: String,
    /// Empty for a real rule; otherwise the opaque symbol whose call named it.
    pub opaque: String,
}

/// The tree's files as `glob()` sees them: sorted repository-relative paths, the
/// directories that hold a BUILD file (each another package), the paths committed as
/// symbolic links, and the directories `.bazelignore` names (each ending in `/`).
pub struct TreeFiles<'a> {
    pub files: Vec<&'a str>,
    pub build_dirs: HashSet<&'a str>,
    pub links: Vec<&'a str>,
    pub ignored: Vec<&'a str>,
}

/// One package's files, package-relative and sorted, listed on the first `glob()`.
pub struct PackageFiles<'a> {
    tree: &'a TreeFiles<'a>,
    directory: &'a str,
    listed: OnceCell<Vec<&'a str>>,
}

impl<'a> PackageFiles<'a> {
    /// The files of the package in `directory` (repository-relative).
    pub fn new(tree: &'a TreeFiles<'a>, directory: &'a str) -> Self {
        PackageFiles {
            tree,
            directory,
            listed: OnceCell::new(),
        }
    }

    /// The package's files, but for those in a directory `.bazelignore` names: Bazel's
    /// `glob()` does not enter one.
    fn get(&self) -> &[&'a str] {
        self.listed.get_or_init(|| {
            let mut owned = package_files(&self.tree.files, self.directory, &self.tree.build_dirs);
            let prefix = self.prefix();
            let ignored: Vec<&str> = (self.tree.ignored.iter())
                .filter_map(|dir| dir.strip_prefix(prefix.as_str()))
                .collect();
            if !ignored.is_empty() {
                owned.retain(|path| !ignored.iter().any(|dir| path.starts_with(dir)));
            }
            owned
        })
    }

    /// What precedes a package-relative path to make it repository-relative.
    fn prefix(&self) -> String {
        if self.directory.is_empty() {
            String::new()
        } else {
            format!("{}/", self.directory)
        }
    }

    /// What `glob()` finds, or None where this reading could differ from Bazel's: a
    /// pattern that reaches a symbolic link (Bazel follows one to a directory, leaves out
    /// a directory it names, and judges a dangling one by itself), or a name that is not
    /// ASCII (Bazel holds it as Latin-1 bytes, so its `len()` and slices differ).
    fn glob(
        &self,
        include: &[String],
        exclude: &[String],
        directories: bool,
    ) -> Option<Vec<String>> {
        let owned = self.get();
        let prefix = self.prefix();
        let mut links = (self.tree.links.iter())
            .filter_map(|link| link.strip_prefix(prefix.as_str()))
            .filter(|link| owned.binary_search(link).is_ok());
        if links.any(|link| include.iter().any(|pattern| glob_touches(pattern, link))) {
            return None;
        }
        let found = expand_glob(include, exclude, directories, owned)?;
        found.iter().all(|path| path.is_ascii()).then_some(found)
    }
}

/// What the evaluation of one file can reach through `Evaluator::extra`.
#[derive(ProvidesStaticType, Default)]
pub struct Context<'a> {
    /// The package the file's relative labels resolve against.
    pub package: String,
    /// The repository the file is in, as the main one names it (`@vendored`; "" for the
    /// main one): a `.bzl` file's `Label()`s and attribute defaults are labels of its
    /// own repository, wherever the rule is used.
    pub repo: String,
    pub records: RefCell<Vec<Record>>,
    /// A BUILD file's package files, for `glob()`; None: not known (a `.bzl` file's top
    /// level, where Bazel has no package to glob either).
    pub files: Option<PackageFiles<'a>>,
    /// The rules declared so far, (name, kind): what `native.existing_rules()` lists. A
    /// symbol from a repository not in the tree declares its `name` of a kind unknown
    /// here (""); any other rule such a macro declares is not listed.
    pub rules: RefCell<Vec<(String, String)>>,
    /// The items the checked operations have read and built (`checked.rs`): steps the
    /// interpreter does not count.
    pub steps: Cell<u64>,
    /// Where the last loop started (`checked.rs`): what a limit the interpreter reaches
    /// itself, which names no line, is reported at.
    pub last_loop: RefCell<Option<FileSpan>>,
}

impl<'e> Context<'e> {
    pub fn of<'a>(eval: &Evaluator<'_, 'a, 'e>) -> Option<&'a Context<'e>> {
        eval.extra
            .and_then(|extra| extra.downcast_ref::<Context<'e>>())
    }
}

/// Every builtin and recorded value; one type keeps the Starlark plumbing in one place.
#[derive(Debug, Clone, ProvidesStaticType, NoSerialize, Allocative)]
pub enum Magic {
    /// A rule or macro nobody defined here (`cc_library`, `native.py_test`).
    Rule { kind: String, implicit: Vec<String> },
    /// A symbol loaded from a repository that is not in the tree, or what it returned.
    Opaque {
        origin: String,
        strings: Vec<String>,
    },
    /// `select({...})`: every key and branch, and whatever was added to it.
    Select { strings: Vec<String> },
    /// `attr.label(default = ...)` and friends: the default labels, absolute.
    Attr { labels: Vec<String> },
    /// The `native` and `attr` namespaces.
    Namespace { name: String },
    /// A builtin function, by name: glob, select, rule, package_name, ...
    Builtin { name: String },
    /// `Label(...)` as seen from one file's package, in its repository (`@name`, or ""
    /// for the main one).
    LabelFn {
        package: String,
        repo: String,
        main_names: Vec<String>,
    },
    /// What `Label(...)` returns: the label, canonical (`//pkg:name`, `@repo//pkg:name`).
    Label { text: String },
    /// `label.relative` or `label.same_package_label`, bound to its label.
    LabelMethod { label: String, method: String },
    /// A rule `native.existing_rule(s)()` gives: its name and kind are known.
    ExistingRule { name: String, kind: String },
    /// A builtin of Starlark itself (`len`, `str`, `json.encode`), called as the
    /// interpreter's own: wrapped so that `type()` and `str()` of it give Bazel's answer
    /// (`builtin_function_or_method`, `<built-in function len>`), not the interpreter's.
    Standard { name: String },
}
starlark_simple_value!(Magic);

impl fmt::Display for Magic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Magic::Rule { kind, .. } => write!(f, "<rule {kind}>"),
            Magic::Opaque { origin, .. } => write!(f, "<opaque {origin}>"),
            Magic::Select { .. } => write!(f, "<select>"),
            Magic::Attr { .. } => write!(f, "<attr>"),
            Magic::Namespace { name } => write!(f, "<{name}>"),
            Magic::Builtin { name } => write!(f, "<built-in {name}>"),
            Magic::LabelFn { .. } => write!(f, "<Label>"),
            Magic::Label { text } => write!(f, "{text}"),
            Magic::LabelMethod { method, .. } => write!(f, "<Label.{method}>"),
            Magic::ExistingRule { name, .. } => write!(f, "<existing rule {name}>"),
            Magic::Standard { name } => write!(f, "<built-in function {name}>"),
        }
    }
}

/// Whether a string may name another package: an absolute label or its literal part.
fn label_like(text: &str) -> bool {
    text.starts_with("//") || text.starts_with('@')
}

/// Every label-like string inside `value`: lists, tuples, dict keys and values, selects.
pub fn strings_of(value: Value<'_>, out: &mut Vec<String>) {
    if let Some(text) = value.unpack_str() {
        if label_like(text) {
            out.push(text.to_owned());
        }
    } else if let Some(list) = ListRef::from_value(value) {
        list.iter().for_each(|item| strings_of(item, out));
    } else if let Some(tuple) = TupleRef::from_value(value) {
        tuple.iter().for_each(|item| strings_of(item, out));
    } else if let Some(dict) = DictRef::from_value(value) {
        for (key, item) in dict.iter() {
            strings_of(key, out);
            strings_of(item, out);
        }
    } else if let Some(magic) = value.downcast_ref::<Magic>() {
        match magic {
            Magic::Opaque { strings, .. } | Magic::Select { strings } => {
                out.extend(strings.iter().cloned())
            }
            Magic::Attr { labels } => out.extend(labels.iter().map(|label| made_in(label))),
            Magic::Label { text } => out.push(made_in(text)),
            _ => {}
        }
    }
}

/// `label` as written in `package`, made absolute (`:x` and `x` become `//package:x`).
pub fn absolute(label: &str, package: &str) -> String {
    if label_like(label) {
        label.to_owned()
    } else {
        format!("//{package}:{}", label.trim_start_matches(':'))
    }
}

fn location(eval: &Evaluator<'_, '_, '_>) -> String {
    eval.call_stack_top_location()
        .map(|span| {
            let line = span.resolve_span().begin.line + 1;
            format!("{}:{line}", span.filename())
        })
        .unwrap_or_default()
}

/// Records the label-like arguments of a rule call (all of them for an opaque one).
fn record_call<'v>(
    eval: &mut Evaluator<'v, '_, '_>,
    args: &Arguments<'v, '_>,
    kind: &str,
    opaque: &str,
    implicit: &[String],
) -> starlark::Result<Vec<String>> {
    let mut strings = Vec::new();
    // An opaque symbol may pass any argument on as a dependency.
    let role = |key: Option<&str>| match opaque {
        "" => argument_role(kind, key),
        _ => Role::Dependency,
    };
    for value in args.positions(eval.heap())? {
        strings_in_role(value, role(None), &mut strings);
    }
    let named = args.names_map()?;
    for (name, value) in &named {
        strings_in_role(*value, role(Some(name.as_str())), &mut strings);
    }
    strings.extend(implicit.iter().cloned());
    // `package()` and `package_group()` declare no rule `existing_rules()` lists.
    let declares_rule = !opaque.is_empty() || !NOT_RULES.contains(&kind);
    if let Some(context) = Context::of(eval) {
        let name = named.get("name").and_then(|n| n.unpack_str());
        if let Some(name) = name.filter(|_| declares_rule && kind != "exports_files") {
            // A rule() of the tree is of the kind it is exported as (`r`), unknown here.
            let known = opaque.is_empty() && !matches!(kind, "rule" | "macro");
            let kind = if known { kind } else { "" };
            let rule = (name.to_owned(), kind.to_owned());
            context.rules.borrow_mut().push(rule);
        }
        let at = location(eval);
        let mut records = context.records.borrow_mut();
        records.extend(strings.iter().map(|label| Record {
            label: label.clone(),
            location: at.clone(),
            opaque: opaque.to_owned(),
        }));
    }
    Ok(strings)
}

/// The builtins that look at what they are given only on its surface (its type, its
/// length, its items one by one): they need no walk of it (`checked::check_walk`).
/// `_SHALLOW` in bazel/read/evaluator.py.
const SHALLOW: [&str; 16] = [
    "len",
    "type",
    "getattr",
    "hasattr",
    "dir",
    "list",
    "tuple",
    "reversed",
    "enumerate",
    "zip",
    "range",
    "bool",
    "int",
    "float",
    "any",
    "all",
];

/// The functions of `native` that declare no rule, each a global of BUILD files too.
pub const PACKAGE_FUNCTIONS: [&str; 12] = [
    "glob",
    "select",
    "package_name",
    "repository_name",
    "repo_name",
    "package_relative_label",
    "module_name",
    "module_version",
    "package_default_visibility",
    "subpackages",
    "existing_rules",
    "existing_rule",
];

fn builtin<'v>(
    name: &str,
    args: &Arguments<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let heap = eval.heap();
    let package = Context::of(eval)
        .map(|c| c.package.clone())
        .unwrap_or_default();
    Ok(match name {
        "glob" => glob(args, eval)?,
        "select" => {
            let mut strings = Vec::new();
            for value in args.positions(heap)? {
                strings_of(value, &mut strings);
            }
            heap.alloc(Magic::Select { strings })
        }
        "package_name" => heap.alloc(package),
        "repository_name" => heap.alloc("@"),
        "repo_name" => heap.alloc(""),
        "package_relative_label" => package_relative_label(args, eval)?,
        // Bazel 6+ answers these from what it knows of the module and the tree; a
        // stand-in here could steer a macro's labels, so the file is read statically.
        "module_name" | "module_version" | "package_default_visibility" | "subpackages" => {
            guessed(|| format!("native.{name}()"));
            Value::new_none()
        }
        "existing_rules" | "existing_rule" => existing_rules(name, args, eval)?,
        "type" => {
            let value = args.positional1(heap)?;
            heap.alloc(match value.downcast_ref::<Magic>() {
                Some(magic) => magic.bazel_type(),
                // A `def` or lambda: "function" in Bazel too (the interpreter's own
                // builtins are `Magic::Standard`; its bound methods never get here:
                // `eval.rs` and `getattr()` stop them).
                None => value.get_type(),
            })
        }
        "getattr" => getattr(args, heap)?,
        "hasattr" => {
            let [value, attribute] = args.positional(heap)?;
            let attribute = attribute.unpack_str().unwrap_or_default();
            heap.alloc(has_attr(value, attribute, heap))
        }
        "dir" => {
            let value = args.positional1(heap)?;
            guess_introspection("dir()", value);
            heap.alloc(value.dir_attr())
        }
        "depset" => depset(args, heap)?,
        "rule" | "macro" => heap.alloc(Magic::Rule {
            kind: name.to_owned(),
            implicit: rule_labels(args, heap)?,
        }),
        // Their attributes' defaults become implicit dependencies of the rules (or of
        // the attributes) that name them: bazel query follows an aspect's.
        "aspect" | "subrule" | "exec_group" => heap.alloc(Magic::Attr {
            labels: declared_labels(args, heap)?,
        }),
        _ => Value::new_none(),
    })
}

/// `getattr(value, name, default)`, noting a default asked of a stand-in value: Bazel's
/// `native` lacks names this one has, and an opaque value's attributes are unknown.
fn getattr<'v>(args: &Arguments<'v, '_>, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
    let given: Vec<Value> = args.positions(heap)?.collect();
    let (value, attribute, default) = match given.as_slice() {
        [value, attribute] => (*value, *attribute, None),
        [value, attribute, default] => (*value, *attribute, Some(*default)),
        _ => {
            return Err(starlark::Error::new_value(std::io::Error::other(
                "getattr() takes a value, a name and maybe a default",
            )))
        }
    };
    let attribute = attribute.unpack_str().unwrap_or_default();
    match value.downcast_ref::<Magic>() {
        Some(magic) if default.is_some() => magic.looked_at("getattr() with a default"),
        Some(_) => {}
        // What a struct holds is exact; a string's or a list's attributes are methods,
        // which Bazel has fewer of, prints and types otherwise.
        None if is_struct(value) && !STRUCT_METHODS.contains(&attribute) => {}
        None => guess_introspection("getattr()", value),
    }
    match (value.get_attr(attribute, heap)?, default) {
        (Some(found), _) => Ok(found),
        (None, Some(default)) => Ok(default),
        (None, None) => Err(starlark::Error::new_value(std::io::Error::other(format!(
            "{} has no attribute {attribute:?}",
            value.get_type()
        )))),
    }
}

/// `native.existing_rules()` (name -> rule) or `native.existing_rule(name)` (the rule
/// or None), from the rules this package declared so far.
fn existing_rules<'v>(
    which: &str,
    args: &Arguments<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let heap = eval.heap();
    let Some(context) = Context::of(eval) else {
        return Ok(heap.alloc(Magic::Opaque {
            origin: format!("native.{which}()"),
            strings: Vec::new(),
        }));
    };
    let rules = context.rules.borrow();
    let rule = |(name, kind): &(String, String)| Magic::ExistingRule {
        name: name.clone(),
        kind: kind.clone(),
    };
    if which == "existing_rule" {
        let wanted = args.positional1(heap)?.unpack_str().unwrap_or_default();
        return Ok(match rules.iter().rev().find(|(name, _)| name == wanted) {
            Some(found) => heap.alloc(rule(found)),
            None => Value::new_none(),
        });
    }
    Ok(heap.alloc(starlark::values::dict::AllocDict(
        rules.iter().map(|found| (found.0.clone(), rule(found))),
    )))
}

/// The methods Bazel 4.2.3 gives every struct, which the interpreter's structs lack.
const STRUCT_METHODS: [&str; 2] = ["to_json", "to_proto"];

/// The attributes of a `Label` in Bazel 4.2.3 (`repo_name` and `same_package_label`,
/// which this evaluator also knows, came later).
const LABEL_ATTRIBUTES: [&str; 5] = [
    "name",
    "package",
    "relative",
    "workspace_name",
    "workspace_root",
];

/// Whether `value` is a struct of the file's own making (`struct(a = 1)`).
fn is_struct(value: Value<'_>) -> bool {
    value.get_type() == "struct"
}

/// `hasattr(value, attribute)`: exact of a struct's fields and of a label's attributes;
/// of anything else the interpreter's answer, noted as a guess, since its strings,
/// lists and dicts have methods Bazel 4.2.3 lacks (`removeprefix`, `codepoints`) and
/// newer Bazels differ again.
fn has_attr<'v>(value: Value<'v>, attribute: &str, heap: Heap<'v>) -> bool {
    if value.downcast_ref::<Magic>().is_none()
        && (!is_struct(value) || STRUCT_METHODS.contains(&attribute))
    {
        guess_introspection("hasattr()", value);
    }
    // A stand-in value notes its own guesses (`Magic::has_attr`).
    value.has_attr(attribute, heap)
}

/// Notes that `how` looked at the attributes of `value`, which Bazel lists otherwise.
fn guess_introspection(how: &str, value: Value<'_>) {
    match value.downcast_ref::<Magic>() {
        Some(magic) => magic.looked_at(how),
        None => guessed(|| format!("{how} of a value of type {}", value.get_type())),
    }
}

/// `depset(direct, transitive = ...)`: a value Bazel prints and types as its own; its
/// labels are kept (a rule given one records them), any look at it is a guess.
fn depset<'v>(args: &Arguments<'v, '_>, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
    Ok(heap.alloc(Magic::Opaque {
        origin: "depset()".to_owned(),
        strings: declared_labels(args, heap)?,
    }))
}

/// The interpreter's own builtins, by name (`json.encode` for a namespace's member),
/// which `Magic::Standard` calls: the globals `eval.rs` wraps.
pub fn standard_globals() -> &'static Globals {
    static STANDARD: OnceLock<Globals> = OnceLock::new();
    STANDARD.get_or_init(|| GlobalsBuilder::extended_by(&EXTENSIONS).build())
}

/// The Starlark library a BUILD or `.bzl` file sees, besides Bazel's own builtins.
pub const EXTENSIONS: [LibraryExtension; 7] = [
    LibraryExtension::StructType,
    LibraryExtension::Map,
    LibraryExtension::Filter,
    LibraryExtension::Partial,
    LibraryExtension::Json,
    LibraryExtension::Print,
    LibraryExtension::SetType,
];

/// The builtin `name` (`len`, `json.encode`) of the interpreter, None if it has none.
fn standard_function<'v>(name: &str, heap: Heap<'v>) -> starlark::Result<Option<Value<'v>>> {
    let (outer, member) = match name.split_once('.') {
        Some((outer, member)) => (outer, Some(member)),
        None => (name, None),
    };
    static BY_NAME: OnceLock<HashMap<&'static str, FrozenValue>> = OnceLock::new();
    let by_name = BY_NAME.get_or_init(|| standard_globals().iter().collect());
    let found = by_name.get(outer).map(|value| value.to_value());
    match (found, member) {
        (Some(namespace), Some(member)) => namespace.get_attr(member, heap),
        (found, _) => Ok(found),
    }
}

/// Calls the interpreter's builtin `name`, noting a result Bazel would hold otherwise.
fn call_standard<'v>(
    name: &str,
    args: &Arguments<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let heap = eval.heap();
    let Some(function) = standard_function(name, heap)? else {
        return Err(starlark::Error::new_value(std::io::Error::other(format!(
            "no builtin {name}"
        ))));
    };
    let positional: Vec<Value> = args.positions(heap)?.collect();
    let named = args.names_map()?;
    let named: Vec<(&str, Value)> = named.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    if matches!(name, "str" | "repr" | "print" | "json.encode") {
        let sorted = name == "json.encode";
        if let Some(what) = positional
            .iter()
            .find_map(|v| printed_unlike_bazel(*v, sorted))
        {
            guessed(|| format!("{name}() of {what}"));
        }
    }
    check_builtin(name, &positional, &named, eval)?;
    let result = eval.eval_function(function, &positional, &named)?;
    check_result(result, eval)?;
    if let Some(what) = unlike_bazel(result) {
        guessed(|| format!("{what} {name}() gave"));
    } else if name == "json.decode" && holds_ordered_dict(result) {
        // Bazel keeps a decoded object's keys in the document's order, this one sorts them.
        guessed(|| "json.decode() of an object with several keys".to_owned());
    }
    Ok(result)
}

/// What in `value` Bazel prints otherwise, None if nothing: a struct (`struct(a = 1)`,
/// fields sorted, there), a `def` or lambda (named with its `.bzl` file there), and, for
/// `json.encode` (`sorted`), a dict of several keys, whose keys Bazel sorts. `%` and
/// `format()` print them too, out of this evaluator's sight (docs/selection.md).
fn printed_unlike_bazel(value: Value<'_>, sorted: bool) -> Option<&'static str> {
    find_held(value, &|v: Value<'_>| match v.get_type() {
        "struct" => Some("a struct"),
        "function" => Some("a def or lambda"),
        _ => (sorted && several_keys(v)).then_some("a dict of several keys"),
    })
}

/// Whether `value` is or holds a dict of more than one key.
fn holds_ordered_dict(value: Value<'_>) -> bool {
    find_held(value, &|v: Value<'_>| several_keys(v).then_some(())).is_some()
}

fn several_keys(value: Value<'_>) -> bool {
    DictRef::from_value(value).is_some_and(|dict| dict.len() > 1)
}

/// What in a builtin's result Bazel 4.2.3 holds otherwise, None if nothing: a float
/// (printed otherwise, `1.23456789e+08` there), or a string with a control or non-ASCII
/// character (`chr(127)`, `json.decode`: Bazel's strings are Latin-1 bytes and its
/// `repr()` escapes otherwise). Looks into `json.decode`'s lists and dicts.
fn unlike_bazel(value: Value<'_>) -> Option<&'static str> {
    find_held(value, &|v: Value<'_>| {
        if v.get_type() == "float" {
            return Some("the float");
        }
        let text = v.unpack_str()?;
        text.chars()
            .any(unlike_bazel_char)
            .then_some("the control or non-ASCII character")
    })
}

/// The first thing `found` finds in `value` or in what it holds: the items of lists
/// and tuples, the keys and values of dicts, at any depth.
fn find_held<T>(value: Value<'_>, found: &impl Fn(Value<'_>) -> Option<T>) -> Option<T> {
    if let Some(hit) = found(value) {
        return Some(hit);
    }
    let inside = |v: Value<'_>| find_held(v, found);
    if let Some(list) = ListRef::from_value(value) {
        return list.iter().find_map(inside);
    }
    if let Some(tuple) = TupleRef::from_value(value) {
        return tuple.content().iter().copied().find_map(inside);
    }
    let dict = DictRef::from_value(value)?;
    let hit = dict
        .iter()
        .find_map(|(key, item)| inside(key).or_else(|| inside(item)));
    hit
}

/// A character Bazel 4.2.3 reads or prints otherwise than this interpreter: control
/// characters other than tab, newline and carriage return, DEL, and all of non-ASCII.
pub fn unlike_bazel_char(c: char) -> bool {
    !(c.is_ascii_graphic() || matches!(c, ' ' | '\t' | '\n' | '\r'))
}

/// The label-like strings of every argument of `rule()`, `aspect()` and the like
/// (attribute defaults, aspects, subrules, toolchains), but their documentation.
fn declared_labels<'v>(args: &Arguments<'v, '_>, heap: Heap<'v>) -> starlark::Result<Vec<String>> {
    let mut labels = Vec::new();
    for value in args.positions(heap)? {
        strings_of(value, &mut labels);
    }
    for (name, value) in args.names_map()? {
        if name.as_str() != "doc" {
            strings_of(value, &mut labels);
        }
    }
    Ok(labels)
}

/// What a `rule()` or `macro()` declaration names: its attributes' defaults, and those
/// of the rule it extends (`parent`) or takes its attributes from (`inherit_attrs`). An
/// `initializer` rewrites every call's arguments, which is not modelled: the file is
/// then read statically.
fn rule_labels<'v>(args: &Arguments<'v, '_>, heap: Heap<'v>) -> starlark::Result<Vec<String>> {
    let mut labels = declared_labels(args, heap)?;
    for (name, value) in args.names_map()? {
        match (name.as_str(), value.downcast_ref::<Magic>()) {
            ("initializer", _) if !value.is_none() => guessed(|| "a rule's initializer".into()),
            ("parent" | "inherit_attrs", Some(Magic::Rule { implicit, .. })) => {
                labels.extend(implicit.iter().cloned())
            }
            _ => {}
        }
    }
    Ok(labels)
}

/// `native.package_relative_label(text)`: a label of the package the BUILD file
/// declares, whichever `.bzl` file asks.
fn package_relative_label<'v>(
    args: &Arguments<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let heap = eval.heap();
    let text = args.positional1(heap)?;
    let (package, repo) = Context::of(eval)
        .map(|c| (c.package.clone(), c.repo.clone()))
        .unwrap_or_default();
    Ok(heap.alloc(label_in(text, &package, &repo, &[])))
}

/// `text` (a string or a label) as a label made in `package` of `repo`: what `Label()`
/// of a `.bzl` file and `native.package_relative_label()` of a BUILD file give.
fn label_in(text: Value<'_>, package: &str, repo: &str, main_names: &[String]) -> Magic {
    let label = in_repository(canonical_label(&label_text(text), package), repo);
    Magic::Label {
        text: main_label(label, main_names),
    }
}

/// `glob(include, exclude, exclude_directories)` over the package's files, as Bazel
/// lists them; opaque when they are not known here, directories could match, or
/// `PackageFiles::glob` cannot be sure.
fn glob<'v>(
    args: &Arguments<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let heap = eval.heap();
    let positional: Vec<Value> = args.positions(heap)?.collect();
    let named = args.names_map()?;
    let argument = |index: usize, name: &str| {
        positional
            .get(index)
            .copied()
            .or_else(|| named.get(name).copied())
    };
    let include = argument(0, "include").and_then(string_list);
    let exclude = argument(1, "exclude").map_or(Some(Vec::new()), string_list);
    let exclude_directories = argument(2, "exclude_directories").map_or(Some(true), |value| {
        value
            .unpack_bool()
            .or_else(|| value.unpack_i32().map(|n| n != 0))
    });
    let files = Context::of(eval).and_then(|context| context.files.as_ref());
    let found = match (files, include, exclude, exclude_directories) {
        (Some(files), Some(include), Some(exclude), Some(directories)) => {
            files.glob(&include, &exclude, directories)
        }
        _ => None,
    };
    Ok(match found {
        Some(paths) => heap.alloc(paths),
        None => heap.alloc(Magic::Opaque {
            origin: "glob()".to_owned(),
            strings: Vec::new(),
        }),
    })
}

/// A list of strings, or None.
fn string_list(value: Value<'_>) -> Option<Vec<String>> {
    ListRef::from_value(value)?
        .iter()
        .map(|item| item.unpack_str().map(str::to_owned))
        .collect()
}

fn attr<'v>(
    name: &str,
    args: &Arguments<'v, '_>,
    eval: &mut Evaluator<'v, '_, '_>,
) -> starlark::Result<Value<'v>> {
    let mut labels = Vec::new();
    let named = args.names_map()?;
    let values_are_labels = name == "string_keyed_label_dict";
    if name.starts_with("label") || values_are_labels {
        if let Some(default) = named.get("default") {
            if default.get_type() == "function" {
                // Bazel calls it with the rule's attributes: any label it may return.
                guessed(|| "an attribute default computed by a function".to_owned());
            }
            let (package, repo) = Context::of(eval)
                .map(|c| (c.package.clone(), c.repo.clone()))
                .unwrap_or_default();
            let mut found = Vec::new();
            collect_all_strings(*default, values_are_labels, &mut found);
            labels = found
                .iter()
                .map(|label| in_repository(absolute(label, &package), &repo))
                .collect();
        }
    }
    // An aspect's own attributes' defaults: dependencies of whatever this attribute names.
    if let Some(aspects) = named.get("aspects") {
        strings_of(*aspects, &mut labels);
    }
    Ok(eval.heap().alloc(Magic::Attr { labels }))
}

/// Every string inside a default (relative labels included, resolved by the caller): a
/// dict's keys, or its values when they are the labels.
fn collect_all_strings(value: Value<'_>, values_are_labels: bool, out: &mut Vec<String>) {
    if let Some(text) = value.unpack_str() {
        out.push(text.to_owned());
    } else if let Some(Magic::Label { text }) = value.downcast_ref::<Magic>() {
        out.push(text.clone());
    } else if let Some(list) = ListRef::from_value(value) {
        list.iter()
            .for_each(|item| collect_all_strings(item, values_are_labels, out));
    } else if let Some(dict) = DictRef::from_value(value) {
        for (key, item) in dict.iter() {
            let label = if values_are_labels { item } else { key };
            collect_all_strings(label, values_are_labels, out);
        }
    }
}

#[starlark_value(type = "bazel_value")]
impl<'v> StarlarkValue<'v> for Magic {
    fn invoke(
        &self,
        _me: Value<'v>,
        args: &Arguments<'v, '_>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> starlark::Result<Value<'v>> {
        // Recording, printing and comparing what a builtin is given walk it recursively.
        let walks = match self {
            Magic::Standard { name } | Magic::Builtin { name } => !SHALLOW.contains(&name.as_str()),
            _ => true,
        };
        if walks {
            let named = args.names_map()?;
            check_walk(
                args.positions(eval.heap())?.chain(named.values().copied()),
                eval,
            )?;
        }
        match self {
            Magic::Rule { kind, implicit } => {
                record_call(eval, args, kind, "", implicit)?;
                Ok(Value::new_none())
            }
            Magic::Opaque {
                origin,
                strings: held,
            } => {
                let mut strings = record_call(eval, args, origin, origin, &[])?;
                // A method of an opaque value gives what it held: `depset([...]).to_list()`.
                strings.extend(held.iter().cloned());
                let origin = format!("{origin}()");
                Ok(eval.heap().alloc(Magic::Opaque { origin, strings }))
            }
            Magic::Builtin { name } => builtin(name, args, eval),
            Magic::Standard { name } => call_standard(name, args, eval),
            Magic::Namespace { name } if name.starts_with("attr.") => attr(&name[5..], args, eval),
            Magic::LabelFn {
                package,
                repo,
                main_names,
            } => {
                let text = args.positional1(eval.heap())?;
                Ok(eval.heap().alloc(label_in(text, package, repo, main_names)))
            }
            Magic::LabelMethod { label, method } => {
                let text = label_text(args.positional1(eval.heap())?);
                let text = match method.as_str() {
                    "same_package_label" => format!(":{text}"),
                    _ => text,
                };
                Ok(eval.heap().alloc(Magic::Label {
                    text: main_label(relative_label(label, &text), &[]),
                }))
            }
            _ => Ok(Value::new_none()),
        }
    }

    fn get_attr(&self, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
        match self {
            Magic::Namespace { name } if name == "native" => Some(heap.alloc(match attribute {
                _ if PACKAGE_FUNCTIONS.contains(&attribute) => Magic::Builtin {
                    name: attribute.to_owned(),
                },
                _ => Magic::Rule {
                    kind: attribute.to_owned(),
                    implicit: Vec::new(),
                },
            })),
            Magic::Namespace { name } if name == "attr" => Some(heap.alloc(Magic::Namespace {
                name: format!("attr.{attribute}"),
            })),
            Magic::Namespace { name } if name == "json" => {
                let name = format!("json.{attribute}");
                let known = matches!(standard_function(&name, heap), Ok(Some(_)));
                known.then(|| heap.alloc(Magic::Standard { name }))
            }
            Magic::Opaque { origin, strings } => Some(heap.alloc(Magic::Opaque {
                origin: format!("{origin}.{attribute}"),
                strings: strings.clone(),
            })),
            Magic::Label { text } => label_attribute(text, attribute, heap),
            _ => None,
        }
    }

    fn collect_repr(&self, collector: &mut String) {
        match self {
            Magic::Label { text } => {
                // This interpreter's `%s` and `"{}".format()` print a label this way too,
                // where Bazel prints `//lib:l`; `str()` is exact (`collect_str`).
                guessed(|| "a label printed by repr(), % or format()".to_owned());
                collector.push_str(&format!("Label({text:?})"));
            }
            _ => self.collect_str(collector),
        }
    }

    fn collect_str(&self, collector: &mut String) {
        // A top-level builtin prints as Bazel's does; a namespace's member
        // (`<built-in method encode of json value>`) is not written out here.
        let exact = match self {
            Magic::Label { .. } => true,
            Magic::Standard { name } => !name.contains('.'),
            _ => false,
        };
        if !exact {
            self.looked_at("str() or repr()");
        }
        collector.push_str(&self.to_string());
    }

    fn write_hash(&self, hasher: &mut StarlarkHasher) -> starlark::Result<()> {
        match self {
            Magic::Label { text } => {
                text.hash(hasher);
                Ok(())
            }
            // Like any value without a hash: a dict key it cannot be.
            _ => Err(starlark::Error::new_value(std::io::Error::other(format!(
                "{self} cannot be a dict key"
            )))),
        }
    }

    fn equals(&self, other: Value<'v>) -> starlark::Result<bool> {
        Ok(match (self, other.downcast_ref::<Magic>()) {
            (Magic::Label { text }, Some(Magic::Label { text: other })) => text == other,
            (Magic::Label { .. }, _) => false,
            (Magic::ExistingRule { .. }, _) if other.is_none() => false,
            _ => {
                self.looked_at("a comparison");
                false
            }
        })
    }

    fn has_attr(&self, attribute: &str, heap: Heap<'v>) -> bool {
        match self {
            Magic::Label { .. } if LABEL_ATTRIBUTES.contains(&attribute) => {}
            Magic::Label { .. } => guessed(|| format!("hasattr() of a label, {attribute}")),
            _ => self.looked_at("hasattr()"),
        }
        self.get_attr(attribute, heap).is_some()
    }

    fn dir_attr(&self) -> Vec<String> {
        self.looked_at("dir()");
        Vec::new()
    }

    fn at(&self, index: Value<'v>, heap: Heap<'v>) -> starlark::Result<Value<'v>> {
        match (self, index.unpack_str()) {
            (Magic::ExistingRule { name, .. }, Some("name")) => Ok(heap.alloc(name.as_str())),
            (Magic::ExistingRule { kind, .. }, Some("kind")) if !kind.is_empty() => {
                Ok(heap.alloc(kind.as_str()))
            }
            _ => {
                self.looked_at("the kind or an attribute");
                Ok(Value::new_none())
            }
        }
    }

    fn add(&self, rhs: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        self.combine(rhs, heap)
    }

    fn radd(&self, lhs: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        self.combine(lhs, heap)
    }

    fn to_bool(&self) -> bool {
        // An existing rule is a non-empty dict to Bazel too.
        if !matches!(self, Magic::ExistingRule { .. }) {
            self.looked_at("the truth of a value");
        }
        true
    }
}

/// A label made by `Label()` or an attribute default, as a string that names the same
/// target from a BUILD file of any repository: Bazel resolves such a label where it was
/// made, so the main repository's `//lib:l`, used by a macro in `@v`'s BUILD file, is
/// `@//lib:l`, not `@v//lib:l`.
fn made_in(label: &str) -> String {
    if label.starts_with("//") {
        format!("@{label}")
    } else {
        label.to_owned()
    }
}

/// `label` (absolute) as a label of the repository `repo` (`@name`, "" for the file's own).
fn in_repository(label: String, repo: &str) -> String {
    if !repo.is_empty() && label.starts_with("//") {
        format!("{repo}{label}")
    } else {
        label
    }
}

/// `label` as Bazel 4.2.3 holds a label of the main repository: `@//lib:l`, and
/// `@<main_names>//lib:l` (`workspace(name = ...)`), are `//lib:l` (equal to it, printed
/// as it, with an empty `workspace_root`).
fn main_label(label: String, main_names: &[String]) -> String {
    let Some((repo, rest)) = label
        .strip_prefix('@')
        .and_then(|stripped| stripped.split_once("//"))
    else {
        return label;
    };
    if repo.is_empty() || main_names.iter().any(|name| name == repo) {
        format!("//{rest}")
    } else {
        label
    }
}

/// The text `Label()` was given: a string, or another label.
fn label_text(value: Value<'_>) -> String {
    match value.downcast_ref::<Magic>() {
        Some(Magic::Label { text }) => text.clone(),
        _ => value.unpack_str().unwrap_or_default().to_owned(),
    }
}

/// `label` as `Label()` in `package` holds it: absolute, with its target name
/// (`//a/b` is `//a/b:b`, `@r` is `@r//:r`).
fn canonical_label(label: &str, package: &str) -> String {
    let absolute = absolute(label, package);
    let (repo, rest) = match absolute.strip_prefix('@') {
        Some(stripped) => match stripped.split_once("//") {
            Some((repo, rest)) => (format!("@{repo}"), rest.to_owned()),
            None => (format!("@{stripped}"), format!(":{stripped}")),
        },
        None => (String::new(), absolute[2..].to_owned()),
    };
    if rest.contains(':') {
        format!("{repo}//{rest}")
    } else {
        let name = rest.rsplit('/').next().unwrap_or_default();
        format!("{repo}//{rest}:{name}")
    }
}

/// The parts of a canonical label: (repository without `@`, package, name).
fn label_parts(text: &str) -> (&str, &str, &str) {
    let (repo, rest) = text.split_once("//").unwrap_or(("", text));
    let (package, name) = rest.split_once(':').unwrap_or((rest, ""));
    (repo.trim_start_matches('@'), package, name)
}

/// `Label(base).relative(text)`: an absolute `text` as it is, else in `base`'s package
/// and repository.
fn relative_label(base: &str, text: &str) -> String {
    if text.starts_with('@') {
        return canonical_label(text, "");
    }
    let (repo, package, _) = label_parts(base);
    let prefix = if repo.is_empty() {
        String::new()
    } else {
        format!("@{repo}")
    };
    // `//z:y` stays in the base's repository: `@v//:x` relative to it is `@v//z:y`.
    format!("{prefix}{}", canonical_label(text, package))
}

fn label_attribute<'v>(text: &str, attribute: &str, heap: Heap<'v>) -> Option<Value<'v>> {
    let (repo, package, name) = label_parts(text);
    Some(match attribute {
        "name" => heap.alloc(name),
        "package" => heap.alloc(package),
        "workspace_name" | "repo_name" => heap.alloc(repo),
        "workspace_root" if repo.is_empty() => heap.alloc(""),
        "workspace_root" => heap.alloc(format!("external/{repo}")),
        "relative" | "same_package_label" => heap.alloc(Magic::LabelMethod {
            label: text.to_owned(),
            method: attribute.to_owned(),
        }),
        _ => return None,
    })
}

impl Magic {
    /// Notes that the evaluation looked at this value in a way Bazel may answer otherwise
    /// (a label and an existing rule's name and kind are exact, not guesses).
    fn looked_at(&self, how: &str) {
        if !matches!(self, Magic::Label { .. }) {
            guessed(|| format!("{how} of {self}"));
        }
    }

    /// What `type()` says of the value Bazel holds here, where that is known.
    fn bazel_type(&self) -> &'static str {
        match self {
            Magic::Label { .. } => "Label",
            Magic::Select { .. } => "select",
            Magic::ExistingRule { .. } => "dict",
            // Bazel's `struct` is a provider.
            Magic::Standard { name } if name == "struct" => "Provider",
            Magic::Standard { .. } => "builtin_function_or_method",
            _ => {
                self.looked_at("type()");
                "unknown"
            }
        }
    }

    /// `select(...) + [...]`, `OPAQUE + [...]`: every string of both sides is kept.
    fn combine<'v>(&self, other: Value<'v>, heap: Heap<'v>) -> Option<starlark::Result<Value<'v>>> {
        let mut strings = Vec::new();
        match self {
            Magic::Select { strings: own } => strings.extend(own.iter().cloned()),
            Magic::Opaque { strings: own, .. } => strings.extend(own.iter().cloned()),
            _ => return None,
        }
        strings_of(other, &mut strings);
        Some(Ok(heap.alloc(match self {
            Magic::Opaque { origin, .. } => Magic::Opaque {
                origin: origin.clone(),
                strings,
            },
            _ => Magic::Select { strings },
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_canonical_as_bazel_prints_them() {
        for (label, package, expected) in [
            ("//lib:l", "a", "//lib:l"),
            ("//lib", "a", "//lib:lib"),
            ("//a/b", "", "//a/b:b"),
            (":x", "tools", "//tools:x"),
            ("x", "tools", "//tools:x"),
            ("@r//p:n", "a", "@r//p:n"),
            ("@r//p", "a", "@r//p:p"),
            ("@r", "a", "@r//:r"),
        ] {
            assert_eq!(
                canonical_label(label, package),
                expected,
                "{label} in {package}"
            );
        }
    }

    #[test]
    fn relative_labels_keep_the_package_and_repository() {
        assert_eq!(relative_label("//lib:x", ":l"), "//lib:l");
        assert_eq!(relative_label("//lib:x", "//other:o"), "//other:o");
        assert_eq!(relative_label("@r//p:x", ":y"), "@r//p:y");
        assert_eq!(label_parts("@r//p/q:n"), ("r", "p/q", "n"));
        assert_eq!(label_parts("//:n"), ("", "", "n"));
    }
}
